"""The `diagnoses` configuration of a run's (or an evaluation's) dataset: its features and its rows.

One row per rollout: the task, the environment version it saw, its reward, its labels per user turn and its weight
under the rho table in force. Kept apart from the labels and profiles because it needs `datasets` (for the
`Features`), which nothing else in diagnosis does.

Not covered: writing the Parquet files (`seal_hub.training.run_records`, `seal_hub.evaluation.results`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from datasets import Features, List, Value

from seal_hub.diagnosis.labels import DEFAULT_RHO, Label
from seal_hub.diagnosis.profile import RolloutDiagnosis

if TYPE_CHECKING:
    from seal_hub.rollout.records import Trajectory

DIAGNOSIS_FEATURES = Features(
    {
        "task_id": Value("string"),
        "category": Value("string"),
        "rollout_index": Value("int32"),
        "interface_version": Value("string"),
        "reward": Value("float64"),
        "labels": List(Value("string")),  # per user turn of the task; null only where it has no ground truth
        "weight": Value("float64"),  # w_j under the rho table used
    }
)


def diagnosis_rows(
    trajectories: Sequence[Trajectory], diagnoses: Sequence[RolloutDiagnosis], rho: Mapping[Label, float] = DEFAULT_RHO
) -> list[dict]:
    """One row per rollout for the `diagnoses` configuration of a run's dataset (see `DIAGNOSIS_FEATURES`)."""
    return [
        {
            "task_id": t.task_id,
            "category": t.category,
            "rollout_index": t.rollout_index,
            "interface_version": t.interface_version,
            "reward": t.reward,
            "labels": [None if label is None else str(label) for label in d.labels],
            "weight": d.weight(rho),
        }
        for t, d in zip(trajectories, diagnoses, strict=True)
    ]
