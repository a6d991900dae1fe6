"""What the labels add up to: a rollout's diagnosis and weight, and a batch's failure profile.

Rollout j with T_j labelled turns: p_j(z) is the share of its turns labelled z and
w_j = clip(sum_z p_j(z) * rho(z), 0.5, 2.0). A batch's `FailureProfile` gives, per label, the count of
turns, their prevalence among all labelled turns, and the mean reward over the label's turn occurrences (each
labelled turn contributes its rollout's reward, as the paper's released statistics do: a rollout with three
such turns counts three times).

A suite makes the `RolloutDiagnosis` of a finished rollout with its own rules (`Suite.diagnose`, e.g.
`seal_hub.envs.bfcl.labels`); everything here is the same for every suite and imports nothing heavy.

Not covered: what to do with the profile (`seal_hub.interface.evolve`, `seal_hub.interface.rho`), and the
records a run or an evaluation stores (`seal_hub.diagnosis.records`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated

from pydantic import Field

from seal_hub.diagnosis.labels import DEFAULT_RHO, WEIGHT_MAX, WEIGHT_MIN, Label


@dataclass(frozen=True)
class RolloutDiagnosis:
    task_id: str
    reward: float
    labels: tuple[Label | None, ...]  # per user turn; None: no ground truth to judge by, left out

    @property
    def profile(self) -> dict[Label, float]:
        """p_j(z): the share of this rollout's labelled turns that carry each label."""
        counted = [label for label in self.labels if label is not None]
        return {label: n / len(counted) for label, n in Counter(counted).items()} if counted else {}

    def weight(self, rho: Mapping[Label, float] = DEFAULT_RHO) -> float:
        """w_j = clip(sum_z p_j(z) rho(z), 0.5, 2.0); 1.0 when no turn was labelled."""
        profile = self.profile
        if not profile:
            return 1.0
        return min(WEIGHT_MAX, max(WEIGHT_MIN, sum(share * rho[label] for label, share in profile.items())))


@dataclass(frozen=True)
class LabelStats:
    """One label's statistics; also the record a snapshot's `cause` and an iteration's metrics file store.

    The bounds are checked where a pydantic model holds the record, under that model's config (a snapshot rejects
    unknown keys, the report's reader ignores them); built directly, as `FailureProfile.of` does, it is not checked.
    """

    count: Annotated[int, Field(ge=0)]  # turns carrying the label
    prevalence: Annotated[float, Field(ge=0.0, le=1.0)]  # count / all labelled turns
    mean_reward: Annotated[float, Field(ge=0.0, le=1.0)]  # mean over the label's turns of their rollout's reward


@dataclass(frozen=True)
class FailureProfile:
    """Per label: count, prevalence, mean reward, over a batch (or a window) of rollouts."""

    stats: dict[Label, LabelStats] = field(default_factory=dict)
    rollouts: int = 0
    turns: int = 0

    @classmethod
    def of(cls, diagnoses: Iterable[RolloutDiagnosis]) -> FailureProfile:
        diagnoses = list(diagnoses)
        counts: Counter[Label] = Counter()
        rewards: Counter[Label] = Counter()  # summed over turn occurrences
        for d in diagnoses:
            labels = [label for label in d.labels if label is not None]
            counts.update(labels)
            for label in labels:
                rewards[label] += d.reward
        turns = sum(counts.values())
        stats = {
            label: LabelStats(counts[label], counts[label] / turns, rewards[label] / counts[label])
            for label in Label
            if counts[label]
        }
        return cls(stats, len(diagnoses), turns)

    def get(self, label: Label) -> LabelStats:
        return self.stats.get(label, LabelStats(0, 0.0, 0.0))

    def to_dict(self) -> dict:
        return {
            "rollouts": self.rollouts,
            "turns": self.turns,
            "labels": {
                str(label): {"count": s.count, "prevalence": s.prevalence, "mean_reward": s.mean_reward}
                for label, s in self.stats.items()
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> FailureProfile:
        stats = {
            Label(name): LabelStats(int(v["count"]), float(v["prevalence"]), float(v["mean_reward"]))
            for name, v in data.get("labels", {}).items()
        }
        return cls(stats, int(data.get("rollouts", 0)), int(data.get("turns", 0)))
