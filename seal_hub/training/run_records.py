"""What every SEAL iteration leaves on disk, and the state a resumed run restores.

Under a run's output directory:

    iterations/step_000001/trajectories.parquet   the rollouts that fed optimizer step 1
                         /diagnoses.parquet       their labels and weights (`diagnosis_rows`)
                         /metrics.json            success rate, label profile, rho, mean weight, interface
    interfaces/v0.json, v1.json, ...              every environment version made (`SnapshotStore`)
    run_config.json                               the policy and SEAL's switches (what `seal-hub report` names)
    held_out/step_000004.json                     a held-out evaluation after optimizer step 4
                                                  (`seal_hub.training.held_out`)
    checkpoint-N/trainer_state.json               transformers' trainer state; its stateful_callbacks hold
                                                  SEAL's loop state (`seal_hub.training.loop_state`): rho, its window,
                                                  the interface, the versions made so far

This module is the one place that spells the ``iterations/step_N`` and ``held_out/step_N.json`` layout: the
trainer, `seal-hub report` (`seal_hub.report.inputs`) and the replay Space (`seal_hub.replay.replay_source`) find
the folders and files with `iteration_dir`, `iteration_folders`, `iteration_step`, `held_out_path` and
`held_out_files`; the publishing callback (`seal_hub.hub.callback`) reads them through the readers the trainer
hands it (`read_metrics`, `read_iteration`), so hub/ needs no import of training/.

Every file of ours is written atomically (temporary file, then rename). A run killed at any point and relaunched
on the same directory resumes from its last complete checkpoint N (`last_checkpoint`: one whose trainer state,
the last file transformers writes, reads whole and holds SEAL's state): iteration folders, environment versions
and unfinished checkpoint folders made after N are removed first and made again, so no trajectory is lost or
duplicated and no version is skipped.

Not covered: publishing these files (`seal_hub.hub`).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from datasets import Dataset

from seal_hub.atomic import write_json
from seal_hub.diagnosis import FailureProfile, Label, RolloutDiagnosis
from seal_hub.diagnosis.records import DIAGNOSIS_FEATURES, diagnosis_rows
from seal_hub.interface import InterfaceSnapshot
from seal_hub.interface.store import SnapshotStore
from seal_hub.rollout.records import Trajectory, read_trajectories, write_trajectories

TRAINER_STATE_FILE = "trainer_state.json"  # transformers' TRAINER_STATE_NAME
# transformers keys a stateful callback's state by its class name: `seal_hub.training.loop_state.SealLoopState`
STATE_CALLBACK = "SealLoopState"
RUN_CONFIG_FILE = "run_config.json"
# the settings a report needs to name a run: the ablation switches and the budget they were compared on
RUN_CONFIG_FIELDS = (
    "env_adaptation",
    "reweighting",
    "closed_loop",
    "evolve_every",
    "num_generations",
    "learning_rate",
    "max_steps",
    "seed",
)


ITERATIONS_DIR = "iterations"
HELD_OUT_DIR = "held_out"
STEP_PREFIX = "step_"
PARTIAL_SUFFIX = ".partial"  # an iteration folder being written (renamed into place when whole)


def _step_name(step: int) -> str:
    return f"{STEP_PREFIX}{step:06d}"


def iteration_dir(output_dir: str | Path, step: int) -> Path:
    """`iterations/step_NNNNNN`: the records of optimizer step `step`."""
    return Path(output_dir) / ITERATIONS_DIR / _step_name(step)


def iteration_folders(output_dir: str | Path, partial: bool = False) -> list[Path]:
    """The run's iteration folders in step order: the finished ones, and with `partial` also those a stopped run
    left half-written (`step_N.partial`)."""
    root = Path(output_dir) / ITERATIONS_DIR
    folders = sorted(root.glob(f"{STEP_PREFIX}*")) if root.is_dir() else []
    return [f for f in folders if partial or not is_partial(f)]


def is_partial(folder: str | Path) -> bool:
    """Whether an iteration folder is one still being written (or left so by a stopped run)."""
    return Path(folder).name.endswith(PARTIAL_SUFFIX)


def iteration_step(folder: str | Path) -> int:
    """N of an iteration folder ``step_N`` (or ``step_N.partial``)."""
    return int(Path(folder).name.removesuffix(PARTIAL_SUFFIX).removeprefix(STEP_PREFIX))


def held_out_path(output_dir: str | Path, step: int) -> Path:
    """`held_out/step_NNNNNN.json`: the held-out evaluation made after optimizer step `step`."""
    return Path(output_dir) / HELD_OUT_DIR / f"{_step_name(step)}.json"


def held_out_files(output_dir: str | Path) -> list[Path]:
    """The run's held-out evaluation files in step order."""
    return sorted((Path(output_dir) / HELD_OUT_DIR).glob(f"{STEP_PREFIX}*.json"))


def iteration_metrics(
    trajectories: Sequence[Trajectory],
    diagnoses: Sequence[RolloutDiagnosis],
    weights: Sequence[float],
    rho: dict[Label, float],
    interface: InterfaceSnapshot,
) -> dict[str, Any]:
    profile = FailureProfile.of(diagnoses)
    return {
        "rollouts": len(trajectories),
        "success_rate": sum(t.passed for t in trajectories) / max(1, len(trajectories)),
        "mean_weight": sum(weights) / max(1, len(weights)),
        "rho": {str(label): value for label, value in rho.items()},
        "interface_version": interface.version,
        "interface_hash": interface.content_hash,
        "label_profile": profile.to_dict(),
        "generated_tokens": sum(t.num_generated_tokens for t in trajectories),
    }


def write_iteration(
    output_dir: str | Path,
    step: int,
    trajectories: Sequence[Trajectory],
    diagnoses: Sequence[RolloutDiagnosis],
    metrics: dict[str, Any],
    rho: dict[Label, float],
) -> Path:
    """Write one iteration's records; the folder appears whole (built aside, then renamed into place)."""
    final = iteration_dir(output_dir, step)
    building = final.with_name(final.name + PARTIAL_SUFFIX)
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    write_trajectories(list(trajectories), building / "trajectories.parquet")
    rows = diagnosis_rows(trajectories, diagnoses, rho)
    Dataset.from_list(rows, features=DIAGNOSIS_FEATURES).to_parquet(str(building / "diagnoses.parquet"))
    write_json(building / "metrics.json", metrics)
    shutil.rmtree(final, ignore_errors=True)
    os.replace(building, final)
    return final


def read_iteration(output_dir: str | Path, step: int) -> tuple[list[Trajectory], list[dict[str, Any]]]:
    """A finished iteration's rollouts and diagnosis rows, as `write_iteration` wrote them."""
    folder = iteration_dir(output_dir, step)
    return read_trajectories(folder / "trajectories.parquet"), pq.read_table(folder / "diagnoses.parquet").to_pylist()


def read_metrics(output_dir: str | Path) -> list[dict[str, Any]]:
    """Every finished iteration's metrics, in step order."""
    folders = iteration_folders(output_dir)
    return [json.loads((p / "metrics.json").read_text("utf-8")) | {"step": iteration_step(p)} for p in folders]


def write_run_config(output_dir: str | Path, model: str, config: Any) -> None:
    """The policy id and `RUN_CONFIG_FIELDS` of a `SealConfig`, as `run_config.json` in the run directory."""
    Path(output_dir).mkdir(parents=True, exist_ok=True)
    write_json(
        Path(output_dir) / RUN_CONFIG_FILE, {"model": model} | {k: getattr(config, k) for k in RUN_CONFIG_FIELDS}
    )


def load_state(checkpoint_dir: str | Path) -> dict[str, Any]:
    """SEAL's loop state in a checkpoint: ``stateful_callbacks["SealLoopState"]`` of its trainer state."""
    path = Path(checkpoint_dir) / TRAINER_STATE_FILE
    try:
        stored = json.loads(path.read_text("utf-8")).get("stateful_callbacks") or {}
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} is missing: {checkpoint_dir} is not a SEAL checkpoint") from None
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{path} is not valid JSON ({exc}); delete the checkpoint to resume from an earlier one"
        ) from None
    state = stored.get(STATE_CALLBACK)
    if isinstance(state, list):
        state = state[0] if state else None
    seal = (state or {}).get("attributes", {}).get("seal")
    if not isinstance(seal, dict):
        raise ValueError(
            f"{path} holds no SEAL loop state (stateful_callbacks[{STATE_CALLBACK!r}]): "
            f"{checkpoint_dir} is not a SEAL checkpoint"
        )
    return seal


def checkpoint_step(folder: str | Path) -> int | None:
    """N of a ``checkpoint-N`` folder name; None for any other name."""
    prefix, _, number = Path(folder).name.partition("-")
    return int(number) if prefix == "checkpoint" and number.isdigit() else None


def last_checkpoint(output_dir: str | Path) -> Path | None:
    """The newest checkpoint-N that was written whole (`is_complete`); None when there is none."""
    root = Path(output_dir)
    found = [(checkpoint_step(p), p) for p in root.glob("checkpoint-*")] if root.is_dir() else []
    complete = [(step, p) for step, p in found if step is not None and is_complete(p)]
    return max(complete)[1] if complete else None


def is_complete(checkpoint_dir: str | Path) -> bool:
    """Whether a checkpoint folder was written whole: its trainer state reads and holds SEAL's loop state.

    transformers writes a checkpoint folder file by file and the trainer state (with SEAL's state in it) last,
    not atomically, so a run killed while checkpointing leaves a newer folder without a readable one: that
    folder is skipped (`prune_after` removes it).
    """
    try:
        load_state(checkpoint_dir)
    except (OSError, ValueError):
        return False
    return True


def prune_after(output_dir: str | Path, step: int, store: SnapshotStore, keep_versions: set[str]) -> None:
    """Remove what a run made after `step` (a resume from checkpoint-`step`, or 0 for a fresh start): iteration
    folders, environment versions not in `keep_versions`, and this run's checkpoint folders (a folder counts as
    this run's when its step has iteration records; any other folder is left alone)."""
    for folder in Path(output_dir).glob("checkpoint-*"):
        made = checkpoint_step(folder)
        if made is not None and made > step and iteration_dir(output_dir, made).is_dir():
            shutil.rmtree(folder)
    for folder in iteration_folders(output_dir, partial=True):
        if is_partial(folder) or iteration_step(folder) > step:
            shutil.rmtree(folder)
    for version in store.versions():
        if version not in keep_versions:
            store.path(version).unlink()
