"""The learning-curve stages of an experiment, each writing its subject's record (`seal_hub.experiment.records`):

- `record_warmup`: the shared warm-up's weight hash; a warm-up rebuilt on another machine is compared with the one
  recorded (`WarmupCheck`: the same weights, or not, said in one line);
- `record_training`: an arm's per-step lines and dev points, read from its run directory once it trained;
- `record_evaluation`: a subject's evaluation (test, or the warm-up on dev: the curves' step 0), reduced;
- `interface_versions`: the SEAL arm's interface versions in force at its dev evaluations, each distinct content
  once, which `record_interface_effect` scores the frozen warm-up under.

A subject whose record holds its test evaluation is done (`arm_recorded`): the experiment neither trains nor
evaluates it again, wherever it ran. Not covered: running a stage (the recipe passes each stage its callable),
drawing the records (`seal_hub.experiment.learning_report`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seal_hub.experiment.config import ARMS_BY_NAME, Arm, ExperimentConfig, seed_folder
from seal_hub.experiment.records import (
    evaluation_summary,
    load_record,
    machine,
    step_lines,
    update_record,
    weights_sha256,
)

SEAL_ARM = "seal"


def arm_record_name(arm: Arm, seed: int) -> str:
    return f"{arm.name}-{seed_folder(seed)}"


def warmup_record_name(seed: int) -> str:
    return f"warmup-{seed_folder(seed)}"


def effect_record_name(seed: int) -> str:
    return f"interface-effect-{seed_folder(seed)}"


def arm_recorded(config: ExperimentConfig, arm: Arm, seed: int) -> bool:
    """Whether the arm's record already holds its test evaluation (trained and scored, here or elsewhere)."""
    return "test" in load_record(config.records, arm_record_name(arm, seed))


@dataclass(frozen=True)
class WarmupCheck:
    sha256: str
    recorded: str | None  # the hash a record held before this build (None: first build)
    recorded_on: dict[str, Any] | None

    @property
    def same(self) -> bool | None:
        return None if self.recorded is None else self.sha256 == self.recorded

    def line(self) -> str:
        if self.recorded is None:
            return f"experiment: warm-up weights sha256 {self.sha256[:16]} recorded"
        where = (self.recorded_on or {}).get("cpu", "another machine")
        if self.same:
            return (
                f"experiment: warm-up rebuilt with the same weights as recorded on {where} (sha256 {self.sha256[:16]})"
            )
        return (
            f"experiment: warm-up rebuilt with different weights from those recorded on {where} "
            f"(sha256 {self.sha256[:16]}, recorded {self.recorded[:16]}): arms trained from each start apart"
        )


def record_warmup(config: ExperimentConfig, seed: int) -> WarmupCheck:
    """Hash the seed's warm-up weights and record them; where a record held another build's hash, keep that one as
    the reference and add this build's under `rebuilds`."""
    name = warmup_record_name(seed)
    record = load_record(config.records, name)
    sha = weights_sha256(config.warmup_dir(seed))
    if "sha256" not in record:
        update_record(config.records, name, seed=seed, sha256=sha, machine=machine())
        return WarmupCheck(sha, None, None)
    rebuilds = [*record.get("rebuilds", []), {"sha256": sha, "same": sha == record["sha256"], "machine": machine()}]
    update_record(config.records, name, rebuilds=rebuilds)
    return WarmupCheck(sha, record["sha256"], record.get("machine"))


def record_training(config: ExperimentConfig, arm: Arm, seed: int, wall_seconds: float) -> dict[str, Any]:
    """The arm's steps (and dev points) from its run directory, its settings and the training's wall time (summed
    over the launches that trained it)."""
    name = arm_record_name(arm, seed)
    before = load_record(config.records, name)
    run_dir = config.run_dir(arm, seed)
    return update_record(
        config.records,
        name,
        arm=arm.name,
        label=arm.label,
        seed=seed,
        switches=arm.switches,
        steps=step_lines(run_dir),
        train_wall_seconds=round(before.get("train_wall_seconds", 0.0) + wall_seconds, 1),
        machine=machine(),
    )


def record_evaluation(config: ExperimentConfig, name: str, key: str, results_dir: Path) -> dict[str, Any]:
    """Put an evaluation's `results.json` (reduced) into record `name` under `key` ("test", "dev")."""
    from seal_hub.evaluation.results import RESULTS_JSON

    results = json.loads((results_dir / RESULTS_JSON).read_text(encoding="utf-8"))
    return update_record(config.records, name, **{key: evaluation_summary(results)})


def interface_versions(config: ExperimentConfig, seed: int) -> list[tuple[int, Any]]:
    """(step, snapshot) of each distinct interface the SEAL arm trained under at its dev evaluations, v0 first (the
    version its first step showed), each content once."""
    from seal_hub.interface.store import SnapshotStore

    arm = ARMS_BY_NAME[SEAL_ARM]
    record = load_record(config.records, arm_record_name(arm, seed))
    store = SnapshotStore(config.run_dir(arm, seed) / "interfaces")
    steps = [line for line in record.get("steps", []) if "dev" in line or line["step"] == 1]
    chosen, seen = [], set()
    for line in steps:
        version = line["interface_version"]
        if version not in store:
            continue
        snapshot = store.get(version)
        if snapshot.content_hash not in seen:
            seen.add(snapshot.content_hash)
            chosen.append((line["step"], snapshot))
    return chosen


def record_interface_effect(
    config: ExperimentConfig, seed: int, step: int, version: str, results_dir: Path, policy: str = "versions"
) -> None:
    """Add a dev evaluation under `version` (in force at the SEAL arm's `step`) to the seed's interface-effect
    record: the frozen warm-up's (`policy` "versions"), or SEAL's trained policy's ("trained": does the policy lean
    on the interface it trained under?)."""
    from seal_hub.evaluation.results import RESULTS_JSON

    name = effect_record_name(seed)
    results = json.loads((results_dir / RESULTS_JSON).read_text(encoding="utf-8"))
    points = dict(load_record(config.records, name).get(policy, {}))
    points[version] = {"step": step, **evaluation_summary(results)}
    update_record(config.records, name, seed=seed, **{policy: points})


def effect_done(config: ExperimentConfig, seed: int, version: str, policy: str = "versions") -> bool:
    return version in load_record(config.records, effect_record_name(seed)).get(policy, {})


def results_dir(config: ExperimentConfig, folder: str, suite: str, split: str, interface: str | None = None) -> Path:
    """Where a subject's evaluation goes: `eval/<suite>` for the test split (as before), `eval-<split>[-<version>]`
    otherwise."""
    safe = "".join(c if c.isalnum() or c in "._-" else "-" for c in suite)
    kind = (
        "eval" if split == "test" and interface is None else f"eval-{split}" + (f"-{interface}" if interface else "")
    )
    return Path(config.output_dir) / folder / kind / safe
