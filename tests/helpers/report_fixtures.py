"""Synthetic run and evaluation directories for the report tests.

Everything here is made up to exercise the report's reading and drawing (a smooth curve, a few interface
versions, an evaluation per variant); none of it is a measured result. The files follow the formats the
trainer (`seal_hub.training.run_records`) and `seal-hub eval` (schema `seal_hub.eval/1`) write.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from datasets import Dataset

from seal_hub.diagnosis import DEFAULT_RHO, Label
from seal_hub.diagnosis.records import DIAGNOSIS_FEATURES
from seal_hub.interface import CapabilityGuidelines, Guideline, InterfaceSnapshot, SchemaCues

CATEGORIES = ("base", "miss_func", "miss_param", "long_context")
FAILURES = (Label.MISSING_TOOL_CALL, Label.ARGUMENT_MISMATCH, Label.STATE_MISMATCH, Label.SPURIOUS_TOOL_CALL)


def write_run(
    root: Path,
    steps: int = 6,
    rollouts: int = 16,
    switches: tuple[bool, bool, bool] = (True,) * 3,
    model: str = "Qwen/Qwen2.5-7B-Instruct",
    evolve_at: tuple[int, ...] = (2, 4),
    gain: float = 0.6,
    held_out_every: int = 0,
) -> Path:
    """A run directory: `steps` iterations whose success rises by `gain`, environment versions made after `evolve_at`,
    a held-out evaluation every `held_out_every` steps (0: none)."""
    env, reweighting, closed_loop = switches
    root.mkdir(parents=True, exist_ok=True)
    config = {"model": model, "env_adaptation": env, "reweighting": reweighting, "closed_loop": closed_loop}
    (root / "run_config.json").write_text(json.dumps(config))
    (root / "interfaces").mkdir(exist_ok=True)
    snapshot = InterfaceSnapshot.null()
    snapshot.save(root / "interfaces" / "v0.json")
    rho = {str(label): value for label, value in DEFAULT_RHO.items()}
    for step in range(1, steps + 1):
        passed = round(rollouts * (0.1 + gain * (1 - math.exp(-step / 3))))
        rows = []
        for i in range(rollouts):
            reward = 1.0 if i < passed else 0.0
            failure = str(FAILURES[(i + step) % len(FAILURES)])
            labels = ["pass", "pass"] if reward else ["pass", failure]
            rows.append(
                {
                    "task_id": f"multi_turn_{CATEGORIES[i % 4]}_{i}",
                    "category": CATEGORIES[i % 4],
                    "rollout_index": i % 2,
                    "interface_version": snapshot.version,
                    "reward": reward,
                    "labels": labels,
                    "weight": 1.0,
                }
            )
        counts: dict[str, list[float]] = {}
        for row in rows:
            for label in row["labels"]:
                counts.setdefault(label, []).append(row["reward"])
        turns = sum(len(r["labels"]) for r in rows)
        profile = {
            label: {"count": len(r), "prevalence": len(r) / turns, "mean_reward": sum(r) / len(r)}
            for label, r in counts.items()
        }
        if closed_loop:
            rho["missing_tool_call"] = min(2.0, round(rho["missing_tool_call"] + 0.05, 6))
            rho["argument_mismatch"] = min(2.0, round(rho["argument_mismatch"] + 0.02, 6))
        metrics = {
            "rollouts": rollouts,
            "success_rate": passed / rollouts,
            "mean_weight": 1.0 if not reweighting else 1.0 + 0.3 * (1 - passed / rollouts),
            "rho": dict(rho),
            "interface_version": snapshot.version,
            "interface_hash": snapshot.content_hash,
            "label_profile": {"rollouts": rollouts, "turns": turns, "labels": profile},
            "generated_tokens": 100 * rollouts,
        }
        folder = root / "iterations" / f"step_{step:06d}"
        folder.mkdir(parents=True)
        (folder / "metrics.json").write_text(json.dumps(metrics))
        Dataset.from_list(rows, features=DIAGNOSIS_FEATURES).to_parquet(str(folder / "diagnoses.parquet"))
        (root / f"checkpoint-{step}").mkdir()
        if held_out_every and step % held_out_every == 0:
            per_category = {c: {"passed": min(10, step + i), "total": 10} for i, c in enumerate(CATEGORIES)}
            passed_total = sum(v["passed"] for v in per_category.values())
            record = {"step": step, "num_tasks": 40, "success_rate": passed_total / 40, "per_category": per_category}
            (root / "held_out").mkdir(exist_ok=True)
            (root / "held_out" / f"step_{step:06d}.json").write_text(json.dumps(record))
        if env and step in evolve_at:
            number = int(snapshot.version[1:]) + 1
            snapshot = InterfaceSnapshot(
                version=f"v{number}",
                parent=snapshot.version,
                schema_cues=SchemaCues(enabled=True, note="Give required arguments exactly."),
                capability_guidelines=CapabilityGuidelines(
                    enabled=number > 1,
                    lines=(Guideline(label=Label.MISSING_TOOL_CALL, text="Call a tool when asked."),)
                    if number > 1
                    else (),
                ),
            )
            snapshot.save(root / "interfaces" / f"{snapshot.version}.json")
    return root


def write_eval(
    root: Path,
    suite: str = "bfcl",
    model: str = "Qwen/Qwen2.5-7B-Instruct",
    adapter: str | None = None,
    passed: tuple[int, ...] = (20, 10, 12, 8),
    per_category: int = 100,
    diagnoses: bool = False,
) -> Path:
    """An evaluation directory with `results.json` (schema seal_hub.eval/1)."""
    root.mkdir(parents=True, exist_ok=True)
    categories = CATEGORIES if suite == "bfcl" else tuple(f"{suite}_part{i}" for i in range(len(passed)))
    scores = {
        c: {"passed": p, "total": per_category, "success_rate": 100 * p / per_category}
        for c, p in zip(categories, passed, strict=True)
    }
    results = {
        "schema": "seal_hub.eval/1",
        "suite": suite,
        "split": "test",
        "split_source": "paper",
        "num_tasks": per_category * len(passed),
        "model": {"id": model, "revision": None},
        "adapter": None
        if adapter is None
        else {"ref": adapter, "repo": adapter.split("@")[0], "revision": "iter-6", "commit": "0" * 40},
        "interface": {"ref": "null", "version": "v0", "content_hash": InterfaceSnapshot.null().content_hash},
        "protocol": {"temperature": 0.0, "max_steps_per_turn": 20},
        "scores": {
            "per_category": scores,
            "average": sum(s["success_rate"] for s in scores.values()) / len(scores),
        },
        "packages": {"seal_hub": "0.1.0"},
        "created_at": "2026-01-01T00:00:00+00:00",
        "wall_seconds": 1.0,
    }
    (root / "results.json").write_text(json.dumps(results, indent=2))
    if diagnoses:  # one row per task, two turns each: failures spread over FAILURES in turn
        rows = []
        for category, p in zip(categories, passed, strict=True):
            for i in range(per_category):
                labels = ["pass", "pass"] if i < p else ["pass", str(FAILURES[i % len(FAILURES)])]
                rows.append(
                    {
                        "task_id": f"{category}_{i}",
                        "category": category,
                        "rollout_index": 0,
                        "interface_version": "v0",
                        "reward": float(i < p),
                        "labels": labels,
                        "weight": 1.0,
                    }
                )
        Dataset.from_list(rows, features=DIAGNOSIS_FEATURES).to_parquet(str(root / "diagnoses.parquet"))
    return root
