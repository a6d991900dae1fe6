"""The report's evaluation figures: one suite's success per category and average, and our `bfcl` averages beside
the paper's.

Design choices: a figure draws `EvalSeries`, one per bar colour: a single evaluation (`series_of`), or one setting
of an experiment, its mean over seeds with the 95% interval of `seal_hub.experiment.intervals` (the experiment
builds those series, with the grouping its tables use, and hands them to `build_report`). The categories are
grouped bars, one colour per series, whiskers where a series has an interval; the average has a panel of its own
(one horizontal bar per series, its number written past the whisker), so the average's numbers never sit on a
crowd of bars. Numbers on the category bars only when there are few series; the tables have them all.

Not covered: the training figures (`seal_hub.report.plots`), computing intervals (the experiment does).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from seal_hub.report.naming import Named
from seal_hub.report.paper import PaperNumbers
from seal_hub.report.plots import WIDTH, _legend_below, _save, _slug, series_colors

NUMBERED = 4  # at most this many series: each category bar gets its number


class Interval(Protocol):
    """A success rate in percent and the half-width of its 95% interval (None: one run, no interval);
    `seal_hub.experiment.intervals.MeanInterval` is one."""

    @property
    def mean(self) -> float: ...

    @property
    def half_width(self) -> float | None: ...


@dataclass(frozen=True)
class Point:
    """One run's success rate: no interval."""

    mean: float
    half_width: float | None = None


@dataclass(frozen=True)
class EvalSeries:
    """What one colour of an evaluation figure shows: per category and the average over categories."""

    name: str
    per_category: Mapping[str, Interval]
    average: Interval
    runs: int = 1  # evaluations behind the means (seeds of a setting)
    model: str | None = None  # the evaluated model's id (matches the paper's rows)
    num_tasks: tuple[int, ...] = ()  # the tasks each of the runs scored


def series_of(named: Named) -> EvalSeries:
    """A single evaluation as a series: its scores, no intervals."""
    r = named.source.results
    per_category = {c: Point(s.success_rate) for c, s in r.scores.per_category.items()}
    return EvalSeries(named.name, per_category, Point(r.scores.average), 1, r.model.id, (r.num_tasks,))


def _high(value: Interval) -> float:
    return value.mean + (value.half_width or 0.0)


def _interval_text(value: Interval, runs: int) -> str:
    if value.half_width is None:
        return f"{value.mean:.2f}" + (f"  ({runs} seeds)" if runs > 1 else "")
    return f"{value.mean:.2f} ± {value.half_width:.2f}  ({runs} seeds)"


def eval_figure(suite: str, series: Sequence[EvalSeries]) -> Figure:
    """Grouped bars per category (one per series, whiskers: 95% interval) above the averages' panel."""
    cats = list(dict.fromkeys(c for s in series for c in s.per_category))
    n = len(series)
    colors = series_colors(n)
    grouped = any(s.runs > 1 for s in series)
    legend_rows = math.ceil(n / 3)  # at most: `_legend_below` puts 1 to 4 in a row
    fig = Figure(figsize=(WIDTH, 5.2 + 0.22 * legend_rows + 0.3 * n), layout="constrained")
    # two subfigures: the averages' long names do not narrow the category bars above them
    upper, lower = fig.subfigures(2, 1, height_ratios=[4.0 + 0.22 * legend_rows, 1.2 + 0.3 * n])
    bars_ax, average_ax = upper.subplots(), lower.subplots()
    width = min(0.84 / n, 0.35)
    for i, s in enumerate(series):
        values = [s.per_category.get(c) for c in cats]
        xs = [g + (i - (n - 1) / 2) * width for g in range(len(cats))]
        heights = [math.nan if v is None else v.mean for v in values]  # NaN: not evaluated, no bar
        # an edge in the bar's colour: a 0% bar shows as a line on the axis, not as nothing
        bars_ax.bar(xs, heights, width=width * 0.88, color=colors[i], edgecolor=colors[i], label=s.name)
        spread = [(x, v) for x, v in zip(xs, values, strict=True) if v is not None and v.half_width is not None]
        if spread:
            bars_ax.errorbar(
                [x for x, _ in spread],
                [v.mean for _, v in spread],
                yerr=[v.half_width for _, v in spread],
                fmt="none",
                ecolor="black",
                elinewidth=1,
                capsize=min(3.0, 60 * width),
            )
        if n <= NUMBERED:
            for x, v in zip(xs, values, strict=True):
                if v is not None:
                    bars_ax.text(x, _high(v) + 1, f"{v.mean:.1f}", ha="center", va="bottom", fontsize=8)
    crowded = sum(len(c) + 2 for c in cats) > 90  # names wider than the axis: slanted
    bars_ax.set_xticks(range(len(cats)), cats, rotation=25 if crowded else 0, ha="right" if crowded else "center")
    bars_ax.set_xlim(-0.5, len(cats) - 0.5)
    bars_ax.set_ylabel("success rate")
    bars_ax.yaxis.set_major_formatter(PercentFormatter())
    top = max((_high(v) for s in series for v in s.per_category.values()), default=0.0)
    bars_ax.set_ylim(0, min(112.0, max(10.0, top * 1.12 + (6 if n <= NUMBERED else 0))))
    bars_ax.set_yticks([t for t in bars_ax.get_yticks() if 0 <= t <= 100])
    bars_ax.grid(alpha=0.3, axis="y")
    bars_ax.set_axisbelow(True)
    how = "mean over seeds, whiskers: 95% t interval" if grouped else "one bar per evaluation"
    bars_ax.set_title(f"Evaluation on {suite}: success rate per category ({how})")
    _legend_below(upper, bars_ax, n)

    ys = list(range(n))
    averages = [s.average for s in series]
    average_ax.barh(ys, [a.mean for a in averages], height=0.7, color=colors)
    spread = [(y, a) for y, a in zip(ys, averages, strict=True) if a.half_width is not None]
    if spread:
        average_ax.errorbar(
            [a.mean for _, a in spread],
            [y for y, _ in spread],
            xerr=[a.half_width for _, a in spread],
            fmt="none",
            ecolor="black",
            elinewidth=1,
            capsize=3,
        )
    right = max(_high(a) for a in averages)
    for y, a, s in zip(ys, averages, series, strict=True):
        average_ax.text(_high(a) + 0.01 * right + 0.3, y, _interval_text(a, s.runs), va="center", fontsize=9)
    average_ax.set_yticks(ys, [s.name for s in series])
    average_ax.invert_yaxis()
    average_ax.set_xlim(0, min(135.0, max(10.0, right * 1.35)))  # room for the number past the whisker
    average_ax.set_xticks([t for t in average_ax.get_xticks() if 0 <= t <= 100])
    average_ax.xaxis.set_major_formatter(PercentFormatter(decimals=0))
    average_ax.grid(alpha=0.3, axis="x")
    average_ax.set_axisbelow(True)
    average_ax.set_title(f"Average over the {len(cats)} categories" + (" (mean ± 95% interval)" if grouped else ""))
    return fig


def plot_evals(suite: str, series: Sequence[EvalSeries], out: Path) -> Path | None:
    """One suite's evaluations (or settings), as `eval_figure` draws them, to `eval_SUITE.png`."""
    if not series:
        return None
    return _save(eval_figure(suite, series), out / f"eval_{_slug(suite)}.png")


def _paper_rows(series: Sequence[EvalSeries], paper: PaperNumbers) -> list[tuple[str, Interval, str]]:
    """(bar label, average, origin): each paper model's rows, then our series of that model; the rest last."""
    rows, placed = [], set()
    for model in dict.fromkeys(p.model for p in paper.results):
        results = [p for p in paper.results if p.model == model]
        rows += [(f"{p.model} · {p.setting}  [{p.table}]", Point(p.average), "paper") for p in results]
        ours = [s for s in series if s.model and paper.for_model(s.model) and s.name not in placed]
        ours = [s for s in ours if paper.for_model(s.model)[0].model == model]
        rows += [(s.name, s.average, "this report") for s in ours]
        placed.update(s.name for s in ours)
    rest = [(s.name, s.average, "this report") for s in series if s.name not in placed]
    counts = {s.name: s.num_tasks for s in series}
    return [  # ours on fewer tasks than the paper: say so on the bar's label
        (
            name
            if origin == "paper" or set(counts[name]) == {paper.num_tasks}
            else f"{name} ({'/'.join(map(str, sorted(set(counts[name]))))} tasks)",
            value,
            origin,
        )
        for name, value, origin in rows + rest
    ]


def plot_paper(series: Sequence[EvalSeries], paper: PaperNumbers, out: Path) -> Path | None:
    """Our `bfcl` averages (whiskers: 95% interval over seeds) beside the paper's, as horizontal bars."""
    if not series:
        return None
    rows = _paper_rows(series, paper)
    colors = {"paper": "#9e9e9e", "this report": "#1f77b4"}
    fig = Figure(figsize=(WIDTH, 1.6 + 0.32 * len(rows)), layout="constrained")
    ax = fig.subplots()
    for origin in colors:
        ys = [i for i, row in enumerate(rows) if row[2] == origin]
        values = [rows[i][1] for i in ys]
        ax.barh(ys, [v.mean for v in values], color=colors[origin], label=origin, height=0.7)
        spread = [(y, v) for y, v in zip(ys, values, strict=True) if v.half_width is not None]
        if spread:
            xerr = [v.half_width for _, v in spread]
            ax.errorbar(
                [v.mean for _, v in spread], [y for y, _ in spread], xerr=xerr, fmt="none", ecolor="black", capsize=3
            )
        for y, v in zip(ys, values, strict=True):
            text = f"{v.mean:.2f}" if v.half_width is None else f"{v.mean:.2f} ± {v.half_width:.2f}"
            ax.text(_high(v) + 0.8, y, text, va="center", fontsize=8)
    ax.set_yticks(range(len(rows)), [row[0] for row in rows])
    ax.invert_yaxis()
    ax.set_xlabel("average success rate over the categories (%)")
    ax.set_xlim(0, min(125.0, max(_high(row[1]) for row in rows) * 1.2 + 1))  # room for the number after a bar
    ax.set_xticks([t for t in ax.get_xticks() if 0 <= t <= 100])
    ax.grid(alpha=0.3, axis="x")
    ax.set_axisbelow(True)
    ax.set_title(f"BFCL v3 multi-turn held-out: ours beside the paper (arXiv {paper.source['arxiv']})")
    _legend_below(fig, ax, len(colors))
    return _save(fig, out / f"{_slug(paper.suite)}_vs_paper.png")
