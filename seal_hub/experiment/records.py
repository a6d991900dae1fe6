"""What an experiment leaves to outlive its machine: one small JSON file per subject in `records_dir`, a folder
meant to be committed (the run directories under `output_dir` hold gigabytes of checkpoints and are not).

    records_dir/warmup-seed-K.json   the shared SFT warm-up: the SHA-256 of its adapter weights (a rebuild on
                                     another machine is checked against it), its dev and test verdicts
    records_dir/ARM-seed-K.json      one arm: a line per optimizer step (training success overall and per
                                     category, groups, labels, interface version, mean rollout weight, rho, dev
                                     success where the step was scored),
                                     its test verdicts, the interface versions it made
    records_dir/interface-effect-seed-K.json   the frozen warm-up scored on dev under each interface version

Each file also names the machine and the wall time. The paired comparison and the curves read these files only, so
arms trained on different machines pair as long as each committed its record. A record is written whole
(`seal_hub.atomic`) and updated in place as its subject's stages finish; `load_record` returns {} for one not yet
written. Not covered: what the files are drawn into (`seal_hub.experiment.long_report`).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from pathlib import Path
from typing import Any

from seal_hub.atomic import write_json

SCHEMA = "seal_hub.experiment.record/1"


def record_path(records_dir: str | Path, name: str) -> Path:
    return Path(records_dir) / f"{name}.json"


def load_record(records_dir: str | Path, name: str) -> dict[str, Any]:
    path = record_path(records_dir, name)
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: unreadable experiment record ({exc}); restore it from git or delete it") from None


def update_record(records_dir: str | Path, name: str, **fields: Any) -> dict[str, Any]:
    """Merge `fields` into the record `name` (written whole, atomically) and return it."""
    record = {"schema": SCHEMA, "name": name, **load_record(records_dir, name), **fields}
    write_json(record_path(records_dir, name), record, sort_keys=False)  # categories keep the suite's order
    return record


def machine() -> dict[str, Any]:
    """What the figures were measured on: the CPU's model name, its cores, and the GPU where one trained."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info: dict[str, Any] = {
        "cpu": cpu,
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
    }
    try:
        import torch

        info["torch"] = torch.__version__
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return info


def weights_sha256(run_dir: str | Path) -> str:
    """SHA-256 over a run's weight files (`*.safetensors`, by name then content): equal hashes, equal weights."""
    digest = hashlib.sha256()
    files = sorted(Path(run_dir).glob("*.safetensors"))
    if not files:
        raise ValueError(f"{run_dir}: no *.safetensors weights to hash")
    for path in files:
        digest.update(path.name.encode())
        with path.open("rb") as weights:
            while chunk := weights.read(1 << 24):
                digest.update(chunk)
    return digest.hexdigest()


def step_lines(run_dir: str | Path) -> list[dict[str, Any]]:
    """One line per optimizer step of a run directory: its iteration's metrics, reduced to what a curve reads,
    and its held-out (dev) evaluation where the step has one."""
    from seal_hub.training.run_records import held_out_files, iteration_dir, read_metrics

    dev = {}
    for path in held_out_files(run_dir):
        point = json.loads(path.read_text(encoding="utf-8"))
        dev[int(point["step"])] = point
    lines = []
    for metrics in read_metrics(run_dir):
        step = int(metrics["step"])
        labels = metrics.get("label_profile", {}).get("labels", {})
        line = {
            "step": step,
            "success_rate": metrics["success_rate"],
            "rollouts": metrics["rollouts"],
            "groups": metrics.get("groups", {}),
            "labels": {name: stats["count"] for name, stats in labels.items()},
            "interface_version": metrics["interface_version"],
            "interface_hash": metrics.get("interface_hash"),
            "mean_weight": metrics.get("mean_weight"),
            "rho": metrics.get("rho", {}),
            "generated_tokens": metrics.get("generated_tokens"),
        }
        line["per_category"] = category_success(iteration_dir(run_dir, step) / "trajectories.parquet")
        if step in dev:
            line["dev"] = dev_point(dev[step])
        lines.append(line)
    return lines


def category_success(trajectories: Path) -> dict[str, list[int]]:
    """The step's rollouts per category: [passed, total] (what pass rates over steps, per category, read)."""
    import pyarrow.parquet as pq

    table = pq.read_table(trajectories, columns=["category", "passed"]).to_pydict()
    counts: dict[str, list[int]] = {}
    for category, passed in zip(table["category"], table["passed"], strict=True):
        cell = counts.setdefault(category, [0, 0])
        cell[0] += int(passed)
        cell[1] += 1
    return counts


def dev_point(held_out: dict[str, Any]) -> dict[str, Any]:
    """A held-out evaluation as a curve's point: the average of the categories' rates (percent), each category's
    passed/total, and its tasks and time."""
    per_category = {c: [v["passed"], v["total"]] for c, v in held_out["per_category"].items()}
    rates = [100 * p / t for p, t in per_category.values() if t]
    return {
        "average": sum(rates) / len(rates) if rates else 0.0,
        "per_category": per_category,
        "num_tasks": held_out["num_tasks"],
        "seconds": held_out.get("seconds"),
    }


def evaluation_summary(results: dict[str, Any]) -> dict[str, Any]:
    """A `results.json` record reduced to what a record keeps: scores, per-task verdicts, protocol, split, time."""
    return {
        "split": results["split"],
        "num_tasks": results["num_tasks"],
        "scores": results["scores"],
        "verdicts": results.get("verdicts"),
        "protocol": results.get("protocol"),
        "interface": results.get("interface"),
        "wall_seconds": results.get("wall_seconds"),
    }
