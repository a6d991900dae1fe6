"""Informative groups (dynamic sampling): train a GRPO step on prompt groups whose rewards differ.

With a 0/1 reward, a group of G rollouts whose rewards are all equal has a zero advantage everywhere: it moves
nothing, and under a token-mean loss (`loss_type: dapo`) its tokens still dilute the groups that do carry a
gradient. After an SFT warm-up most training prompts sit at a pass rate near 0 or near 1, so most groups are dead
(docs/learning.md). TRL 1.16 has no remedy; verl (DAPO's `filter_groups`), SkyRL, prime-rl and AReaL each have one.
Here, `SealConfig.dynamic_sampling`:

- `none` (the paper's configs): the step trains on the groups it drew, as TRL does;
- `filter` (DAPO): keep the groups whose rewards differ; while fewer than the step trains, draw more groups, up to
  `max_extra_draws` more draws; slots still empty after the last draw are masked out of the loss and its normaliser;
- `replace`: the same draws, but slots still empty after the last draw are filled with copies of kept groups (every
  slot trains; a kept group can count twice), as POLARIS does; with `max_extra_draws: 0` it costs no generation.

Design choice: `plan_step` decides from the groups every rank has gathered, so every rank makes the same draws,
puts the same groups in the same slots and trains the same number of groups. An extra draw asks for the groups
still missing, scaled by the share of the step's groups so far that were informative (at least a quarter), rounded
up to a multiple of the world size, and at most as many as the step trains. The cost is generation for the extra
groups only (a dead group is never trained).

Not covered: which tasks the extra groups are (`seal_hub.training.task_sampler` draws them) and the generation
itself (the trainer's).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

DYNAMIC_SAMPLING = ("none", "filter", "replace")
MIN_KEEP_RATE = 0.25  # the keep rate an extra draw assumes at worst when it sizes itself


@dataclass(frozen=True)
class Group:
    """One prompt's G rollouts in the step's pool: their positions in it and their rewards."""

    task_id: str
    positions: tuple[int, ...]
    rewards: tuple[float, ...]

    @property
    def informative(self) -> bool:
        """The rewards differ, so GRPO's group-relative advantage is not zero everywhere."""
        return max(self.rewards) - min(self.rewards) > 1e-6


def groups_of(task_ids: Sequence[str], rewards: Sequence[float], size: int, offset: int = 0) -> list[Group]:
    """Consecutive runs of `size` rollouts as groups (TRL's layout: a group's rollouts are adjacent), their
    positions counted from `offset` in the step's pool."""
    if len(task_ids) % size:
        raise ValueError(f"{len(task_ids)} rollouts do not make whole groups of {size}")
    groups = []
    for start in range(0, len(task_ids), size):
        ids = task_ids[start : start + size]
        if len(set(ids)) != 1:
            raise ValueError(f"rollouts {start}..{start + size - 1} are not one task's group: {sorted(set(ids))}")
        positions = tuple(range(offset + start, offset + start + size))
        groups.append(Group(ids[0], positions, tuple(rewards[start : start + size])))
    return groups


@dataclass
class StepPlan:
    """What a step trains: per slot, the group in it (None: masked out), and what drawing it took."""

    slots: list[Group | None]
    drawn: int  # groups generated this step, the first draw included
    kept: int  # of them, informative
    draws: int  # generation rounds this step (1 without extra draws)
    copies: int = 0  # slots filled with a copy of a kept group (replace)
    groups: list[Group] = field(default_factory=list)  # every group drawn, in draw order

    @property
    def trained(self) -> int:
        return sum(slot is not None for slot in self.slots)

    def metrics(self) -> dict[str, int]:
        return {
            "drawn": self.drawn,
            "kept": self.kept,
            "draws": self.draws,
            "trained": self.trained,
            "copies": self.copies,
            "masked": len(self.slots) - self.trained,
        }


def extra_draw_size(missing: int, kept: int, drawn: int, slots: int, world: int) -> int:
    """Groups the next extra draw asks for (module docstring): the missing ones over the keep rate so far."""
    rate = max(MIN_KEEP_RATE, kept / drawn if drawn else 1.0)
    wanted = min(slots, math.ceil(missing / rate))
    return max(world, math.ceil(wanted / world) * world)


def plan_step(
    first: list[Group],
    mode: str,
    max_extra_draws: int,
    draw_more: Callable[[int, int], list[Group]],
    world: int = 1,
) -> StepPlan:
    """Fill the step's slots (as many as `first` has groups) under `mode`; `draw_more(count, draw)` generates
    `count` more groups (draw 1, 2, ...) and returns them as every rank sees them."""
    if mode not in DYNAMIC_SAMPLING:
        raise ValueError(f"dynamic_sampling must be one of {', '.join(DYNAMIC_SAMPLING)}; got {mode!r}")
    slots = len(first)
    if mode == "none":
        return StepPlan(list(first), drawn=slots, kept=sum(g.informative for g in first), draws=1, groups=list(first))
    groups = list(first)
    kept = [g for g in first if g.informative]
    draws = 1
    while len(kept) < slots and draws <= max_extra_draws:
        count = extra_draw_size(slots - len(kept), len(kept), len(groups), slots, world)
        more = draw_more(count, draws)
        draws += 1
        groups += more
        kept += [g for g in more if g.informative]
    chosen: list[Group | None] = list(kept[:slots])
    copies = 0
    while len(chosen) < slots:
        if mode == "replace" and kept:
            chosen.append(kept[copies % len(kept)])
            copies += 1
        else:
            chosen.append(None)
    return StepPlan(chosen, drawn=len(groups), kept=len(kept), draws=draws, copies=copies, groups=groups)
