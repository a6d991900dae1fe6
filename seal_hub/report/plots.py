"""The report's figures, as PNG files: training success, the label profile, rho, interface versions, and
evaluations side by side (with the paper's averages for `bfcl`).

Design choices: matplotlib's object API (`Figure`, rendered by the Agg canvas) and never `pyplot`, so drawing
keeps no global state, needs no display and does not switch anyone's backend. Each label keeps one colour in
every figure. Legends sit outside the axes (right or below) so they never cover data; figures are sized to be
read at 100% (about 1100 pixels wide, 10-12 pt text). A function returns the path it wrote, or None when
its sources hold nothing to draw (a run with no finished iteration, no evaluation).

Not covered: loading (`seal_hub.report.sources`) and tables (`seal_hub.report.tables`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, PercentFormatter

from seal_hub.diagnosis import Label
from seal_hub.report.naming import Named
from seal_hub.report.paper import PaperNumbers
from seal_hub.report.tables import categories

DPI = 110
WIDTH = 10.0  # inches
LABEL_COLORS = {
    "pass": "#2ca02c",
    "correct_abstention": "#98df8a",
    "spurious_tool_call": "#d62728",
    "missing_tool_call": "#ff7f0e",
    "invalid_tool_call": "#9467bd",
    "argument_mismatch": "#8c564b",
    "recovery_failure": "#e377c2",
    "instance_mismatch": "#7f7f7f",
    "state_mismatch": "#1f77b4",
    "response_mismatch": "#17becf",
}
MARKERS = "osD^vP*Xhp"


def _save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    return path


def _labels_seen(named: Sequence[Named], attribute: str) -> list[str]:
    """Known labels in the enum's order, then any label only the files know, alphabetically."""
    seen = {label for n in named for it in n.source.iterations for label in getattr(it, attribute)}
    known = [str(label) for label in Label if str(label) in seen]
    return known + sorted(seen - set(known))


def _steps_axis(ax, bottom: bool = True) -> None:
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.tick_params(labelbottom=True)
    if bottom:
        ax.set_xlabel("training step (iteration)")
    ax.grid(alpha=0.3)
    ax.set_axisbelow(True)


def _legend_below(fig: Figure, ax, count: int) -> None:
    handles, labels = ax.get_legend_handles_labels()
    longest = max((len(label) for label in labels), default=0)
    fits = 3 if longest <= 36 else 2 if longest <= 60 else 1  # columns that stay within the figure's width
    fig.legend(handles, labels, loc="outside lower center", ncols=min(fits, count, len(handles)), frameon=False)


def plot_success(runs: Sequence[Named], out: Path) -> Path | None:
    runs = [n for n in runs if n.source.iterations]
    if not runs:
        return None
    fig = Figure(figsize=(WIDTH, 6.5), layout="constrained")
    success, weight = fig.subplots(2, 1, sharex=True, height_ratios=[2, 1])
    for i, named in enumerate(runs):
        its = named.source.iterations
        steps = [it.step for it in its]
        style = {
            "marker": MARKERS[i % len(MARKERS)] if len(its) <= 40 else None,
            "markersize": max(4, 10 - 2 * i),  # earlier runs draw bigger: a run on top of another stays visible
            "linewidth": max(1.2, 3.0 - 0.6 * i),
            "label": named.name,
        }
        (line,) = success.plot(steps, [100 * it.success_rate for it in its], clip_on=False, zorder=3, **style)
        weight.plot(steps, [it.mean_weight for it in its], **style)
        if named.source.held_out:
            points = named.source.held_out
            success.plot(
                [p.step for p in points],
                [100 * p.success_rate for p in points],
                color=line.get_color(),
                linestyle="--",
                marker=MARKERS[i % len(MARKERS)],  # held-out points are few: always marked
                markerfacecolor="white",
                markersize=max(7, style["markersize"]),
                clip_on=False,
                zorder=3,
                label=f"{named.name} · held-out ({points[-1].num_tasks} tasks)",
            )
    held_out = any(n.source.held_out for n in runs)
    success.set_title(
        "Training success rate per iteration (share of rollouts verified correct)"
        + ("\ndashed: held-out evaluation during training" if held_out else "")
    )
    success.set_ylabel("success rate")
    success.yaxis.set_major_formatter(PercentFormatter())
    top = max(100 * it.success_rate for n in runs for it in (*n.source.iterations, *n.source.held_out))
    success.set_ylim(0, min(104.0, max(10.0, top * 1.15)))  # room above a 100% point
    success.set_yticks([t for t in success.get_yticks() if 0 <= t <= 100])
    success.grid(alpha=0.3)
    weight.set_title("Mean rollout weight w (1.0 = no reweighting)")
    weight.set_ylabel("mean w")
    weight.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    _steps_axis(weight)
    _legend_below(fig, success, len(success.get_legend_handles_labels()[0]))
    return _save(fig, out / "success.png")


def plot_label_profile(runs: Sequence[Named], out: Path) -> Path | None:
    runs = [n for n in runs if n.source.iterations]
    if not runs:
        return None
    labels = _labels_seen(runs, "prevalence")
    fig = Figure(figsize=(WIDTH, 1.2 + 2.8 * len(runs)), layout="constrained")
    axes = fig.subplots(len(runs), 1, squeeze=False, sharex=True)[:, 0]
    for ax, named in zip(axes, runs, strict=True):
        its = named.source.iterations
        steps = [it.step for it in its]
        bottom = [0.0] * len(its)
        for label in labels:
            share = [100 * it.prevalence.get(label, 0.0) for it in its]
            width = 0.85 if len(its) <= 40 else 1.0  # many steps: bars touch, no striping
            ax.bar(steps, share, bottom=bottom, width=width, color=LABEL_COLORS.get(label, "#bcbd22"), label=label)
            bottom = [b + s for b, s in zip(bottom, share, strict=True)]
        ax.set_title(f"{named.name}: turn labels per iteration")
        ax.set_ylabel("share of labelled turns")
        ax.yaxis.set_major_formatter(PercentFormatter())
        ax.set_ylim(0, 100)
        _steps_axis(ax, bottom=ax is axes[-1])
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles[::-1], names[::-1], loc="outside right upper", title="label (top to bottom)")
    fig.suptitle("Label profile over training (stacked; every user turn gets one label)")
    return _save(fig, out / "label_profile.png")


def _same_series(labels: Sequence[str], series: dict[str, list[float]]) -> list[list[str]]:
    """Labels grouped by identical rho series (drawn as one line, so no line hides another)."""
    groups: dict[tuple[float, ...], list[str]] = {}
    for label in labels:
        groups.setdefault(tuple(series[label]), []).append(label)
    return list(groups.values())


def plot_rho(runs: Sequence[Named], out: Path) -> Path | None:
    runs = [n for n in runs if n.source.iterations]
    if not runs:
        return None
    labels = _labels_seen(runs, "rho")
    fig = Figure(figsize=(WIDTH, 1.2 + 3.0 * len(runs)), layout="constrained")
    axes = fig.subplots(len(runs), 1, squeeze=False, sharex=True, sharey=True)[:, 0]
    for ax, named in zip(axes, runs, strict=True):
        its = named.source.iterations
        steps = [it.step for it in its]
        series = {label: [it.rho.get(label, float("nan")) for it in its] for label in labels}
        for group in _same_series(labels, series):
            index = labels.index(group[0])
            ax.plot(
                steps,
                series[group[0]],
                color=LABEL_COLORS.get(group[0], "#bcbd22"),
                marker=MARKERS[index % len(MARKERS)] if len(its) <= 40 else None,
                markersize=5,
                label=",\n".join(group),
            )
        ax.set_title(f"{named.name}: rho per label")
        ax.set_ylabel("rho (label weight)")
        _steps_axis(ax, bottom=ax is axes[-1])
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, title="label(s) with this rho")
    fig.suptitle("rho over training (the table each iteration's rollouts were weighted with)")
    return _save(fig, out / "rho.png")


def _spans(versions: Sequence[tuple[int, str]]) -> list[tuple[int, int, str]]:
    """Consecutive iterations on the same interface version: (first step, last step, version)."""
    spans: list[tuple[int, int, str]] = []
    for step, version in versions:
        if spans and spans[-1][2] == version and spans[-1][1] == step - 1:
            spans[-1] = (spans[-1][0], step, version)
        else:
            spans.append((step, step, version))
    return spans


def plot_interface_timeline(runs: Sequence[Named], out: Path) -> Path | None:
    runs = [n for n in runs if n.source.iterations]
    if not runs:
        return None
    fig = Figure(figsize=(WIDTH, 1.8 + 0.7 * len(runs)), layout="constrained")
    ax = fig.subplots()
    cmap = colormaps["viridis"]
    last_step = max(n.source.iterations[-1].step for n in runs)
    for lane, named in enumerate(runs):
        run = named.source
        order = {v.version: i for i, v in enumerate(run.interfaces)}
        count = max(2, len(order))
        spans = _spans([(it.step, it.interface_version) for it in run.iterations])
        crowded = len(spans) > 12  # too many to label one by one: no edges, one label for the lane
        for first, last, version in spans:
            shade = cmap(0.15 + 0.7 * order.get(version, 0) / (count - 1))
            edge = shade if crowded else "white"
            ax.broken_barh([(first - 0.5, last - first + 1)], (lane - 0.35, 0.7), facecolors=shade, edgecolor=edge)
            if not crowded and last - first + 1 >= last_step / 25:  # no text on spans too narrow to hold it
                ax.text((first + last) / 2, lane, version, ha="center", va="center", color="white", fontsize=9)
        if crowded:
            text = f"{spans[0][2]} → {spans[-1][2]} ({len({v for _, _, v in spans})} versions)"
            box = {"boxstyle": "round", "facecolor": "black", "alpha": 0.6, "edgecolor": "none"}
            middle = (spans[0][0] + spans[-1][1]) / 2
            ax.text(middle, lane, text, ha="center", va="center", color="white", fontsize=9, bbox=box)
        unused = [
            v.version for v in run.interfaces if v.version not in {it.interface_version for it in run.iterations}
        ]
        if unused:
            ax.text(run.iterations[-1].step + 0.7, lane, f"next: {unused[-1]}", va="center", fontsize=9)
    ax.set_yticks(range(len(runs)), [n.name for n in runs])
    ax.set_ylim(len(runs) - 0.5, -0.5)
    ax.set_xlim(0.5, last_step + 0.5 + max(1.0, 0.12 * last_step))
    _steps_axis(ax)
    ax.grid(alpha=0.3, axis="x")
    ax.set_title("Interface version the rollouts of each iteration saw (darker = older; 'next': made, not used yet)")
    return _save(fig, out / "interface_timeline.png")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "_", text.lower()).strip("_") or "suite"


def plot_evals(suite: str, evals: Sequence[Named], out: Path) -> Path | None:
    """One suite's evaluations side by side: grouped bars per category, then the average."""
    if not evals:
        return None
    cats = categories(evals)
    groups = [*cats, "average"]
    fig = Figure(figsize=(WIDTH, 5.2), layout="constrained")
    ax = fig.subplots()
    width = min(0.8 / len(evals), 0.35)
    for i, named in enumerate(evals):
        scores = named.source.results.scores
        values = [scores.per_category[c].success_rate if c in scores.per_category else float("nan") for c in cats]
        values.append(scores.average)
        xs = [g + (i - (len(evals) - 1) / 2) * width for g in range(len(groups))]
        bars = ax.bar(xs, values, width=width * 0.95, label=named.name)
        labels = [f"{v:.1f}" if len(evals) <= 4 and v == v else "" for v in values[:-1]]  # NaN: not evaluated
        ax.bar_label(
            bars, labels=[*labels, f"{values[-1]:.2f}"], fontsize=8, padding=2, rotation=90 if len(evals) > 4 else 0
        )
    ax.set_xticks(range(len(groups)), groups)
    ax.axvline(len(cats) - 0.5, color="grey", linewidth=0.8, linestyle=":")
    ax.set_ylabel("success rate")
    ax.yaxis.set_major_formatter(PercentFormatter())
    top = max(named.source.results.scores.average for named in evals)
    top = max(top, *(s.success_rate for n in evals for s in n.source.results.scores.per_category.values()))
    ax.set_ylim(0, min(108.0, max(10.0, top * 1.2)))  # room for a number above a 100% bar
    ax.set_yticks([t for t in ax.get_yticks() if 0 <= t <= 100])
    ax.grid(alpha=0.3, axis="y")
    ax.set_title(f"Evaluation on {suite}: success rate per category and average")
    _legend_below(fig, ax, len(evals))
    return _save(fig, out / f"eval_{_slug(suite)}.png")


def _paper_rows(evals: Sequence[Named], paper: PaperNumbers) -> list[tuple[str, float, str]]:
    """(bar label, average, origin): each paper model's rows, then our evaluations of that model; the rest last."""
    rows, placed = [], set()
    for model in dict.fromkeys(p.model for p in paper.results):
        results = [p for p in paper.results if p.model == model]
        rows += [(f"{p.model} · {p.setting}  [{p.table}]", p.average, "paper") for p in results]
        ours = [n for n in evals if paper.for_model(n.source.results.model.id) and n.name not in placed]
        ours = [n for n in ours if paper.for_model(n.source.results.model.id)[0].model == model]
        rows += [(n.name, n.source.results.scores.average, "this report") for n in ours]
        placed.update(n.name for n in ours)
    rest = [(n.name, n.source.results.scores.average, "this report") for n in evals if n.name not in placed]
    counts = {n.name: n.source.results.num_tasks for n in evals}
    return [  # ours on fewer tasks than the paper: say so on the bar's label
        (name if origin == "paper" or counts[name] == paper.num_tasks else f"{name} ({counts[name]} tasks)", v, origin)
        for name, v, origin in rows + rest
    ]


def plot_paper(evals: Sequence[Named], paper: PaperNumbers, out: Path) -> Path | None:
    """Our `bfcl` averages beside the paper's (main results and ablations), as horizontal bars."""
    if not evals:
        return None
    rows = _paper_rows(evals, paper)
    colors = {"paper": "#9e9e9e", "this report": "#1f77b4"}
    fig = Figure(figsize=(WIDTH, 1.6 + 0.32 * len(rows)), layout="constrained")
    ax = fig.subplots()
    for origin in colors:
        ys = [i for i, row in enumerate(rows) if row[2] == origin]
        bars = ax.barh(ys, [rows[i][1] for i in ys], color=colors[origin], label=origin, height=0.7)
        ax.bar_label(bars, fmt="%.2f", fontsize=8, padding=3)
    ax.set_yticks(range(len(rows)), [row[0] for row in rows])
    ax.invert_yaxis()
    ax.set_xlabel("average success rate over the four categories (%)")
    ax.set_xlim(0, min(112.0, max(row[1] for row in rows) * 1.15 + 1))  # room for the number after a bar
    ax.set_xticks([t for t in ax.get_xticks() if 0 <= t <= 100])
    ax.grid(alpha=0.3, axis="x")
    ax.set_axisbelow(True)
    ax.set_title(f"BFCL v3 multi-turn held-out: ours beside the paper (arXiv {paper.source['arxiv']})")
    _legend_below(fig, ax, len(colors))
    return _save(fig, out / f"{_slug(paper.suite)}_vs_paper.png")
