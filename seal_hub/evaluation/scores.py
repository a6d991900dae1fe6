"""Scores in the paper's format: success rate per category and their unweighted mean.

Table 1 of the SEAL paper reports, per BFCL category, the share of held-out tasks whose episode passed (in
percent), and as "avg" the mean of those per-category rates, not the rate over all tasks. `Scores.of` takes
(category, passed) pairs, one per evaluated task, in any order; the category order follows the suite's.

The same computation ships as a Hugging Face `evaluate` module (`seal_hub/evaluation/metric/`), which the
tests check against this one. Not covered: confidence intervals, or several rollouts per task.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CategoryScore:
    passed: int
    total: int

    @property
    def success_rate(self) -> float:
        """Percent of the category's tasks that passed."""
        return 100.0 * self.passed / self.total if self.total else 0.0


@dataclass(frozen=True)
class Scores:
    per_category: dict[str, CategoryScore]

    @classmethod
    def of(cls, outcomes: Iterable[tuple[str, bool]], categories: Sequence[str] = ()) -> Scores:
        """Scores of (category, passed) outcomes; categories listed first keep that order, others follow sorted."""
        counts: dict[str, list[int]] = {}
        for category, passed in outcomes:
            count = counts.setdefault(category, [0, 0])
            count[0] += bool(passed)
            count[1] += 1
        order = [c for c in categories if c in counts] + sorted(set(counts) - set(categories))
        return cls({c: CategoryScore(*counts[c]) for c in order})

    @property
    def average(self) -> float:
        """The unweighted mean of the per-category success rates (the paper's "avg"), in percent."""
        rates = [score.success_rate for score in self.per_category.values()]
        return sum(rates) / len(rates) if rates else 0.0

    @property
    def num_tasks(self) -> int:
        return sum(score.total for score in self.per_category.values())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Scores:
        """The scores `as_dict` wrote (the `scores` of a `results.json`)."""
        return cls({name: CategoryScore(s["passed"], s["total"]) for name, s in data["per_category"].items()})

    def as_dict(self) -> dict[str, Any]:
        return {
            "per_category": {
                name: {"passed": s.passed, "total": s.total, "success_rate": s.success_rate}
                for name, s in self.per_category.items()
            },
            "average": self.average,
        }

    def table(self, title: str) -> str:
        """A Markdown table in the paper's layout: one column per category, then the average."""
        names = list(self.per_category)
        header = "| " + " | ".join([title, *names, "avg"]) + " |"
        rule = "|" + "---|" * (len(names) + 2)
        rates = [f"{self.per_category[n].success_rate:.2f}" for n in names]
        counts = [f"{self.per_category[n].passed}/{self.per_category[n].total}" for n in names]
        row = "| " + " | ".join(["success rate (%)", *rates, f"{self.average:.2f}"]) + " |"
        tally = "| " + " | ".join(["passed / tasks", *counts, f"{self.num_tasks} tasks"]) + " |"
        return "\n".join([header, rule, row, tally])
