"""Two policies scored on the same tasks, compared task by task: the difference of their success rates per category
and of their average (the unweighted mean of the categories' rates, the paper's "avg"), each with a 95% paired
bootstrap interval, and McNemar's exact test on the tasks where they disagree.

Pairing is what makes a few hundred tasks enough: both policies answered the same requests, so the difference's
noise is only in the tasks where they disagree. The bootstrap resamples tasks with replacement within each
category (the categories' sizes are fixed by the split, so the average's resamples keep them), applies the same
draw to both policies, and reads the 2.5th and 97.5th percentiles of the difference. McNemar's exact test asks
whether the disagreements split evenly (two-sided binomial at 1/2): a small p-value says they do not.

The input is `results.json`'s `verdicts` (task id -> category, passed), so evaluations made on different machines
pair as long as they scored the same task ids. Not covered: running the evaluations (`seal_hub.experiment.run`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

AVERAGE = "avg"
RESAMPLES = 10_000


@dataclass(frozen=True)
class Verdict:
    category: str
    passed: bool


@dataclass(frozen=True)
class PairedDifference:
    """One category's (or the average's) comparison of A against B, in percent and points."""

    name: str
    tasks: int
    a_rate: float
    b_rate: float
    low: float  # 95% paired bootstrap interval of a_rate - b_rate, points
    high: float
    a_only: int  # tasks A passed and B failed (for the average: over all categories)
    b_only: int
    p_value: float  # McNemar's exact two-sided test on a_only vs b_only

    @property
    def difference(self) -> float:
        return self.a_rate - self.b_rate

    def interval(self) -> str:
        return f"{self.low:+.1f} to {self.high:+.1f}"


def verdicts_of(results: Mapping) -> dict[str, Verdict]:
    """The per-task verdicts of a `results.json` record; one without them (written before they were recorded)
    is refused with what to do."""
    raw = results.get("verdicts")
    if not isinstance(raw, Mapping):
        raise ValueError("this results.json has no per-task verdicts; evaluate again to pair it task by task")
    return {task: Verdict(str(v["category"]), bool(v["passed"])) for task, v in raw.items()}


def mcnemar_p(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value: the binomial(a_only + b_only, 1/2) tail at the smaller count, doubled."""
    n = a_only + b_only
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(a_only, b_only) + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired_comparison(
    a: Mapping[str, Verdict], b: Mapping[str, Verdict], resamples: int = RESAMPLES, seed: int = 0
) -> list[PairedDifference]:
    """A against B on the same tasks: one row per category (in A's order) and the average last."""
    if set(a) != set(b):
        only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
        raise ValueError(
            f"the evaluations scored different tasks ({len(only_a)} only in the first, e.g. {only_a[:3]}; "
            f"{len(only_b)} only in the second, e.g. {only_b[:3]}): pair evaluations of the same split and limit"
        )
    if not a:
        raise ValueError("no tasks to compare")
    for task in a:
        if a[task].category != b[task].category:
            raise ValueError(f"task {task} is {a[task].category} in one evaluation, {b[task].category} in the other")
    categories = list(dict.fromkeys(v.category for v in a.values()))
    rng = np.random.default_rng(seed)
    rows, per_category_draws = [], []
    a_only_all = b_only_all = 0
    for category in categories:
        ids = [task for task in a if a[task].category == category]
        pa = np.array([a[t].passed for t in ids], dtype=float)
        pb = np.array([b[t].passed for t in ids], dtype=float)
        draws = rng.integers(0, len(ids), size=(resamples, len(ids)))
        diffs = 100 * (pa[draws].mean(axis=1) - pb[draws].mean(axis=1))
        per_category_draws.append(diffs)
        a_only, b_only = int(((pa == 1) & (pb == 0)).sum()), int(((pa == 0) & (pb == 1)).sum())
        a_only_all, b_only_all = a_only_all + a_only, b_only_all + b_only
        low, high = np.percentile(diffs, [2.5, 97.5])
        rows.append(
            PairedDifference(
                category, len(ids), 100 * pa.mean(), 100 * pb.mean(), float(low), float(high), a_only, b_only,
                mcnemar_p(a_only, b_only),
            )
        )  # fmt: skip
    average = np.mean(per_category_draws, axis=0)
    low, high = np.percentile(average, [2.5, 97.5])
    rows.append(
        PairedDifference(
            AVERAGE,
            len(a),
            sum(r.a_rate for r in rows) / len(rows),
            sum(r.b_rate for r in rows) / len(rows),
            float(low),
            float(high),
            a_only_all,
            b_only_all,
            mcnemar_p(a_only_all, b_only_all),
        )
    )
    return rows


def paired_table(rows: list[PairedDifference], a_name: str, b_name: str) -> list[str]:
    """The comparison as a Markdown table: rates, the difference with its interval, the disagreements and p."""
    lines = [
        f"| category | tasks | {a_name} | {b_name} | {a_name} - {b_name}, points (95% paired bootstrap) "
        f"| only {a_name} passed | only {b_name} passed | McNemar p |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        name = f"**{r.name}**" if r.name == AVERAGE else r.name
        lines.append(
            f"| {name} | {r.tasks} | {r.a_rate:.1f}% | {r.b_rate:.1f}% | {r.difference:+.1f} ({r.interval()}) "
            f"| {r.a_only} | {r.b_only} | {r.p_value:.3g} |"
        )
    return lines
