"""The mean over seeds and its 95% confidence interval (Student's t), as the experiment's tables give them.

With n runs of an arm (one per seed), the interval is mean +- t(0.975, n - 1) * s / sqrt(n), s the sample
standard deviation: the usual interval for a mean from few runs (three seeds: t = 4.303, so the interval is
wide; that is what three runs can say). One run has no interval. The t quantiles are the standard table's,
to three decimals; past 30 degrees of freedom the normal 1.960 is used.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

T_975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
NORMAL_975 = 1.960


@dataclass(frozen=True)
class MeanInterval:
    mean: float
    half_width: float | None  # None: a single run
    n: int

    def __str__(self) -> str:
        return self.text(1)

    def text(self, digits: int) -> str:
        """`mean ± half-width` (a single run: the mean alone), with `digits` decimals."""
        if self.half_width is None:
            return f"{self.mean:.{digits}f}"
        return f"{self.mean:.{digits}f} ± {self.half_width:.{digits}f}"

    @property
    def low(self) -> float | None:
        return None if self.half_width is None else self.mean - self.half_width

    @property
    def high(self) -> float | None:
        return None if self.half_width is None else self.mean + self.half_width


def mean_interval(values: Sequence[float]) -> MeanInterval:
    """The mean of `values` (one per seed) and the half-width of its 95% t interval."""
    if not values:
        raise ValueError("no values to average")
    n = len(values)
    mean = sum(values) / n
    if n == 1:
        return MeanInterval(mean, None, 1)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    t = T_975[n - 2] if n - 1 <= len(T_975) else NORMAL_975
    return MeanInterval(mean, t * sd / math.sqrt(n), n)
