"""The closed-loop update of the advantage weights (rho), and the trainer's window of diagnoses for it.

`update_rho` is the closed-loop update of the advantage weights, a pure function:
target(z) = base(z) * (1 + prevalence(z) * (1 - mean_reward(z)) * min(1, count(z) / 32)), clamped to
[0.5, 2]; rho(z) <- rho(z) + beta * (target(z) - rho(z)), beta = 0.25; `pass` is held at its base, as in
the paper's released update (moving it like a failure label would up-weight successful rollouts whenever
most turns pass but most rollouts fail). Counts and mean rewards are over turn occurrences
(`FailureProfile`). `RhoWindow` is the trainer's state for it: the diagnoses seen since the last epoch
boundary, the live rho, `step()` every training step and `reset()` every epoch. The released order, which the
trainer follows: a batch is observed (`step`), rho updated, and then that same batch weighted with the new rho.

Not covered: the evolution rules and the settings both share (`seal_hub.interface.evolve`), and applying the
weights to advantages (`seal_hub.training.trainer`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from seal_hub.diagnosis import DEFAULT_RHO, FailureProfile, Label, RolloutDiagnosis
from seal_hub.interface.evolve import EvolveConfig


def update_rho(
    rho: Mapping[Label, float], base: Mapping[Label, float], profile: FailureProfile, config: EvolveConfig
) -> dict[Label, float]:
    """One closed-loop step for every label of `rho` (pure: returns a new table). Absent labels aim at base;
    `pass` stays at its base."""
    missing = [str(label) for label in rho if label not in base]
    if missing:
        raise ValueError(f"base has no weight for {', '.join(missing)}; give base the same labels as rho")
    updated = {}
    for label, current in rho.items():
        if label == Label.PASS:
            updated[label] = base[label]
            continue
        stats = profile.get(label)
        evidence = min(1.0, stats.count / config.rho_count_scale)
        target = base[label] * (1.0 + stats.prevalence * (1.0 - stats.mean_reward) * evidence)
        target = min(config.rho_max, max(config.rho_min, target))
        updated[label] = current + config.rho_beta * (target - current)
    return updated


@dataclass
class RhoWindow:
    """The trainer's rho state: diagnoses since the last epoch boundary and the live table.

    `step(diagnoses)` adds a step's diagnoses to the window and (when `config.closed_loop`) moves rho one
    EMA step toward the window's targets; `reset()` starts a new epoch's window and keeps rho.
    """

    config: EvolveConfig = field(default_factory=EvolveConfig)
    base: dict[Label, float] = field(default_factory=lambda: dict(DEFAULT_RHO))
    rho: dict[Label, float] = field(default_factory=dict)
    diagnoses: list[RolloutDiagnosis] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.rho:
            self.rho = dict(self.base)

    def add(self, diagnoses: Iterable[RolloutDiagnosis]) -> None:
        self.diagnoses.extend(diagnoses)

    def profile(self) -> FailureProfile:
        return FailureProfile.of(self.diagnoses)

    def step(self, diagnoses: Iterable[RolloutDiagnosis]) -> dict[Label, float]:
        self.add(diagnoses)
        if self.config.closed_loop:
            self.rho = update_rho(self.rho, self.base, self.profile(), self.config)
        return dict(self.rho)

    def reset(self) -> None:
        self.diagnoses = []
