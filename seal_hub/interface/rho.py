"""The closed-loop advantage weights (rho): their settings, their update and the trainer's window, in one place.

`update_rho` is the closed-loop update of the advantage weights, a pure function:
target(z) = base(z) * (1 + prevalence(z) * (1 - mean_reward(z)) * min(1, count(z) / rho_count_scale)), clamped
to [rho_min, rho_max]; rho(z) <- rho(z) + rho_beta * (target(z) - rho(z)). The paper's numbers are the defaults
(count scale 32, clamp [0.5, 2], beta 0.25). `pass` is held at its base, as in the paper's released update (moving
it like a failure label would up-weight successful rollouts whenever most turns pass but most rollouts fail).
Counts and mean rewards are over turn occurrences (`FailureProfile`).

`RhoSettings` is the frozen record of those numbers and of the two switches of the paper's ablations that act on
rho: `closed_loop` (update rho every step, else keep it fixed) and `reweighting` (multiply advantages by each
rollout's weight, else 1). A run builds it from `SealConfig`'s flat fields (`SealConfig.rho_settings()`), which
keep their recipe names; an invalid value is refused here, with the field's name.

`RhoWindow` is the trainer's state for it: the diagnoses seen since the last epoch boundary, the live rho, `step()`
every training step, `weights()` for that step's rollouts and `reset()` every epoch. The released order, which the
trainer follows: a batch is observed (`step`), rho updated, and then that same batch weighted with the new rho
(`RolloutDiagnosis.weight`: w_j = clip(sum_z p_j(z) rho(z), 0.5, 2)).

Not covered: the failure profile the update reads (`seal_hub.diagnosis.profile`), the interface evolution rules
(`seal_hub.interface.evolve`), and applying the weights to TRL's advantages (`seal_hub.training.trainer`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from seal_hub.diagnosis import DEFAULT_RHO, FailureProfile, Label, LabelStats, RolloutDiagnosis


@dataclass(frozen=True)
class RhoSettings:
    """How rho moves and whether it weighs the advantages; field names are `SealConfig`'s (flags and YAML keys)."""

    closed_loop: bool = True  # update rho every step from the window (False: rho stays where it started)
    reweighting: bool = True  # weigh each rollout's advantage by w_j (False: every weight is 1)
    rho_beta: float = 0.25  # EMA step toward the target, in (0, 1]
    rho_count_scale: float = 32  # turn count at which a label's evidence is full
    rho_min: float = 0.5  # lower clamp of a target
    rho_max: float = 2.0  # upper clamp of a target

    def __post_init__(self) -> None:
        if not 0.0 < self.rho_beta <= 1.0:
            raise ValueError(f"rho_beta must be in (0, 1], got {self.rho_beta}")
        if self.rho_count_scale <= 0:
            raise ValueError(f"rho_count_scale must be > 0, got {self.rho_count_scale}")
        if not 0.0 < self.rho_min <= self.rho_max:
            raise ValueError(
                f"rho_min ({self.rho_min}) and rho_max ({self.rho_max}) need 0 < rho_min <= rho_max; "
                "set rho_min below rho_max"
            )

    def target(self, base: float, stats: LabelStats) -> float:
        """The label's target: its base raised by how common and how unrewarded it is, weighed by the evidence."""
        evidence = min(1.0, stats.count / self.rho_count_scale)
        target = base * (1.0 + stats.prevalence * (1.0 - stats.mean_reward) * evidence)
        return min(self.rho_max, max(self.rho_min, target))


def update_rho(
    rho: Mapping[Label, float], base: Mapping[Label, float], profile: FailureProfile, settings: RhoSettings
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
        target = settings.target(base[label], profile.get(label))
        updated[label] = current + settings.rho_beta * (target - current)
    return updated


@dataclass
class RhoWindow:
    """The trainer's rho state: diagnoses since the last epoch boundary and the live table.

    `step(diagnoses)` adds a step's diagnoses to the window and (when `settings.closed_loop`) moves rho one
    EMA step toward the window's targets; `weights(diagnoses)` are their rollout weights under the live rho (all 1
    without `settings.reweighting`); `reset()` starts a new epoch's window and keeps rho.
    """

    settings: RhoSettings = field(default_factory=RhoSettings)
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
        if self.settings.closed_loop:
            self.rho = update_rho(self.rho, self.base, self.profile(), self.settings)
        return dict(self.rho)

    def weights(self, diagnoses: Iterable[RolloutDiagnosis]) -> list[float]:
        """w_j of each rollout under the live rho (`RolloutDiagnosis.weight`), or 1.0 each without reweighting."""
        return [d.weight(self.rho) if self.settings.reweighting else 1.0 for d in diagnoses]

    def reset(self) -> None:
        self.diagnoses = []
