"""Which training tasks a step draws: uniformly (the paper), or near the policy's frontier.

SEAL's environment adapts to the failures the agent reveals: the learning interface adapts how a task is shown, the
task sampler which tasks are shown. `TaskSampler` keeps every training task's latest verified pass rate (the share
of its latest group's rollouts that passed: the verifier already computed it) and, with `task_sampler: frontier`,
draws each step's tasks without replacement with probability proportional to

    w(task) = FLOOR + 1 - p^G - (1 - p)^G

where p is the task's estimated pass rate (`TaskSampler.pass_rate`) and G the rollouts per task. The second part
is the probability that G rollouts of the task do not all agree, i.e. that its GRPO group has any advantage: with a
0/1 reward a group that all passes or all fails gives no gradient, so the draw spends rollouts where learning can
happen. FLOOR (0.05) keeps tasks that always or never pass in the draw (pass rates move as the policy learns), and
every category keeps at least CATEGORY_SHARE of an even split of the draw, so a category whose first groups all
failed is not left at the per-task floor for the rest of the run (docs/learning.md, on the smart home's run).

Design choice: the draw is a function of (seed, step, draw index) and the pass-rate table only, and the table is
part of the checkpointed loop state (`seal_hub.training.loop_state`): a resumed run draws what the uninterrupted
run drew. `summary()` is what an environment version records of the sampler (each iteration's `metrics.json`, a
published version's `task_sampler.json` and card).

Not covered: curricula over task features other than the pass rate (length, tools), and sampling with replacement.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

TASK_SAMPLERS = ("uniform", "frontier")
FLOOR = 0.05  # weight of a task whose group is sure to agree (always or never passes), next to <= 1 for the rest
CATEGORY_SHARE = 0.5  # each category keeps at least this share of an even split of the draw (1 / (2C) of it)
UNSEEN_RATE = 0.5  # the pass rate assumed for a category nothing has been seen of
_SEED_STRIDE = 1_000_003  # (seed, step, draw) -> one generator seed, the parts far apart


@dataclass
class TaskSampler:
    """Each training task's latest pass rate, and draws of tasks by it (module docstring)."""

    kind: str = "uniform"
    num_generations: int = 8
    categories: dict[str, str] = field(default_factory=dict)  # task id -> category
    latest: dict[str, tuple[int, int]] = field(default_factory=dict)  # task id -> (passed, rollouts) of its last group

    def __post_init__(self) -> None:
        if self.kind not in TASK_SAMPLERS:
            raise ValueError(f"task_sampler must be one of {', '.join(TASK_SAMPLERS)}; got {self.kind!r}")

    # ----- what the rollouts showed -----

    def observe(self, outcomes: Iterable[tuple[str, bool]]) -> None:
        """Record each task's latest group: `outcomes` are (task id, passed) of one step's rollouts."""
        groups: dict[str, list[int]] = {}
        for task_id, passed in outcomes:
            counts = groups.setdefault(task_id, [0, 0])
            counts[0] += int(passed)
            counts[1] += 1
        for task_id, (passed, total) in groups.items():
            self.latest[task_id] = (passed, total)

    def category_rates(self) -> dict[str, float]:
        """Per category, the pooled pass rate of its seen tasks' latest groups."""
        pooled: dict[str, list[int]] = {}
        for task_id, (passed, total) in self.latest.items():
            counts = pooled.setdefault(self.categories.get(task_id, ""), [0, 0])
            counts[0] += passed
            counts[1] += total
        return {category: passed / total for category, (passed, total) in pooled.items() if total}

    def pass_rate(self, task_id: str, category_rates: dict[str, float] | None = None) -> float:
        """The task's estimated pass rate: its latest group's k passes of n shrunk toward its category's rate with the
        weight of one group, (k + G * p_cat) / (n + G). A run draws far fewer tasks than it has, so most are unseen
        when weighed: an unseen task takes its category's rate (`category_rates`), and a category nothing has been
        seen of takes UNSEEN_RATE (0.5, the most informative guess)."""
        rates = self.category_rates() if category_rates is None else category_rates
        prior = rates.get(self.categories.get(task_id, ""), UNSEEN_RATE)
        passed, total = self.latest.get(task_id, (0, 0))
        return (passed + self.num_generations * prior) / (total + self.num_generations)

    def weights(self, task_ids: Sequence[str]) -> list[float]:
        """The draw weight of each task: 1 each when uniform; when frontier, FLOOR + P(its group has an advantage),
        with every category lifted to its CATEGORY_SHARE of the total (module docstring)."""
        if self.kind == "uniform":
            return [1.0] * len(task_ids)
        rates = self.category_rates()
        g = self.num_generations
        out = []
        for task_id in task_ids:
            p = self.pass_rate(task_id, rates)
            out.append(FLOOR + 1.0 - p**g - (1.0 - p) ** g)
        return self._lift_categories(task_ids, out)

    def _lift_categories(self, task_ids: Sequence[str], weights: list[float]) -> list[float]:
        """Scale the weights of each category below its floor share up to that share, the others unchanged.
        Lifting some categories lowers the others' shares, so it repeats until none is below (at most C passes)."""
        members: dict[str, list[int]] = {}
        for index, task_id in enumerate(task_ids):
            members.setdefault(self.categories.get(task_id, ""), []).append(index)
        share = CATEGORY_SHARE / len(members) if members else 0.0
        lifted: set[str] = set()
        for _ in range(len(members)):
            sums = {c: sum(weights[i] for i in idx) for c, idx in members.items()}
            total = sum(sums.values())
            low = {c for c, s in sums.items() if s < share * total * (1 - 1e-9)} | lifted
            if low == lifted:
                break
            rest = sum(s for c, s in sums.items() if c not in low)
            target = share * rest / (1 - share * len(low))  # each low category's sum: `share` of the new total
            for category in low:
                scale = target / sums[category]
                for i in members[category]:
                    weights[i] *= scale
            lifted = low
        return weights

    # ----- drawing -----

    def draw(
        self, task_ids: Sequence[str], count: int, seed: int, step: int, draw: int, exclude: Iterable[str] = ()
    ) -> list[str]:
        """`count` distinct tasks of `task_ids` (none of `exclude` while others remain), by weight, without
        replacement; a function of the arguments and the pass-rate table only. Fewer tasks than `count`: all of
        them, and then, once those are spent, the excluded ones."""
        excluded = set(exclude)
        fresh = [t for t in task_ids if t not in excluded]
        pools = [fresh, [t for t in task_ids if t in excluded]]
        rng = random.Random(seed * _SEED_STRIDE**2 + step * _SEED_STRIDE + draw)
        chosen: list[str] = []
        for pool in pools:
            if len(chosen) >= count:
                break
            chosen += _weighted_sample(pool, self.weights(pool), count - len(chosen), rng)
        return chosen

    # ----- checkpoint and records -----

    def state(self) -> dict[str, Any]:
        """JSON-ready state for the checkpoint (the categories come back from the training tasks)."""
        return {"kind": self.kind, "latest": {t: list(v) for t, v in sorted(self.latest.items())}}

    def load_state(self, data: dict[str, Any]) -> None:
        self.latest = {t: (int(v[0]), int(v[1])) for t, v in data.get("latest", {}).items()}

    def summary(self, top: int = 10) -> dict[str, Any]:
        """What an environment version records of the sampler: its rule, per category the pass rate and the share
        of the next draw's weight, and the tasks it weighs most."""
        task_ids = sorted(self.categories)
        weights = self.weights(task_ids)
        total = sum(weights) or 1.0
        rates = self.category_rates()
        by_category: dict[str, dict[str, float]] = {}
        for task_id, weight in zip(task_ids, weights, strict=True):
            category = self.categories[task_id]
            entry = by_category.setdefault(category, {"tasks": 0, "seen": 0, "draw_share": 0.0})
            entry["tasks"] += 1
            entry["seen"] += int(task_id in self.latest)
            entry["draw_share"] += weight / total
        for category, entry in by_category.items():
            entry["pass_rate"] = rates.get(category)
            entry["draw_share"] = round(entry["draw_share"], 4)
        ranked = sorted(zip(task_ids, weights, strict=True), key=lambda kv: (-kv[1], kv[0]))[:top]
        return {
            "kind": self.kind,
            "rule": "uniform"
            if self.kind == "uniform"
            else f"{FLOOR} + 1 - p^G - (1-p)^G, G={self.num_generations}; each category >= {CATEGORY_SHARE} of 1/C",
            "tasks_seen": len(self.latest),
            "categories": dict(sorted(by_category.items())),
            "most_weighted": [{"task_id": t, "weight": round(w, 4)} for t, w in ranked],
        }


def _weighted_sample(items: Sequence[str], weights: Sequence[float], count: int, rng: random.Random) -> list[str]:
    """`count` distinct items drawn one after another with probability proportional to weight (all if fewer)."""
    items, weights = list(items), list(weights)
    chosen = []
    while items and len(chosen) < count:
        total = sum(weights)
        pick = rng.random() * total
        index = 0
        while index < len(items) - 1 and pick >= weights[index]:
            pick -= weights[index]
            index += 1
        chosen.append(items.pop(index))
        weights.pop(index)
    return chosen
