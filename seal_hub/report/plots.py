"""The report's training figures, as PNG files: training success, the label profile, rho, environment versions.

Design choices: matplotlib's object API (`Figure`, rendered by the Agg canvas) and never `pyplot`, so drawing
keeps no global state, needs no display and does not switch anyone's backend. Each label keeps one colour in
every figure. Legends sit outside the axes (right or below) so they never cover data; figures are sized to be
read at 100% (about 1100 pixels wide, 10-12 pt text). A function returns the path it wrote, or None when
its sources hold nothing to draw (a run with no finished iteration, no evaluation).

Not covered: loading (`seal_hub.report.inputs`), tables (`seal_hub.report.tables`), the evaluation figures
(`seal_hub.report.eval_plots`, drawn with this module's sizes and colours).
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


def series_colors(count: int) -> list:
    """`count` distinct colours, one per run or setting: tab10's, then tab20's (dark ones first), then hues."""
    if count <= 10:
        return [colormaps["tab10"](i) for i in range(count)]
    if count <= 20:
        return [colormaps["tab20"](i) for i in [*range(0, 20, 2), *range(1, 20, 2)][:count]]
    return [colormaps["hsv"](i / count) for i in range(count)]


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
    fits = 4 if longest <= 24 else 3 if longest <= 36 else 2 if longest <= 60 else 1  # columns within the width
    fig.legend(handles, labels, loc="outside lower center", ncols=min(fits, count, len(handles)), frameon=False)


def plot_success(runs: Sequence[Named], out: Path) -> Path | None:
    runs = [n for n in runs if n.source.iterations]
    if not runs:
        return None
    fig = Figure(figsize=(WIDTH, 6.5), layout="constrained")
    success, weight = fig.subplots(2, 1, sharex=True, height_ratios=[2, 1])
    colors = series_colors(len(runs))
    for i, named in enumerate(runs):
        its = named.source.iterations
        steps = [it.step for it in its]
        style = {
            "color": colors[i],
            "marker": MARKERS[i % len(MARKERS)] if len(its) <= 40 else None,
            "markersize": max(4, 10 - 2 * i),  # earlier runs draw bigger: a run on top of another stays visible
            "linewidth": max(1.2, 3.0 - 0.6 * i),
            "label": named.name,
        }
        success.plot(steps, [100 * it.success_rate for it in its], clip_on=False, zorder=3, **style)
        weight.plot(steps, [it.mean_weight for it in its], **style)
        stages = {stage.name: stage for stage in named.source.stages}
        if named.source.held_out or stages:
            # the held-out learning curve: base and warm-up at step 0 (the comparison's stages), then each
            # evaluation made during training, on the same held-out tasks
            points = named.source.held_out
            start = [stages[name] for name in ("warmup", "base") if name in stages][:1]
            tasks = points[-1].num_tasks if points else start[0].num_tasks if start else 0
            success.plot(
                [0] * len(start) + [p.step for p in points],
                [100 * s.average for s in start] + [100 * p.average for p in points],
                color=colors[i],
                linestyle="--",
                marker=MARKERS[i % len(MARKERS)],  # held-out points are few: always marked
                markerfacecolor="white",
                markersize=max(7, style["markersize"]),
                clip_on=False,
                zorder=3,
                label=f"{named.name} · held-out ({tasks} tasks)",
            )
            if "base" in stages and "warmup" in stages:
                success.plot(
                    [0],
                    [100 * stages["base"].average],
                    color=colors[i],
                    marker="X",
                    markersize=9,
                    linestyle="",
                    clip_on=False,
                    zorder=4,
                    label=f"{named.name} · base model, held-out",
                )
    held_out = any(n.source.held_out or n.source.stages for n in runs)
    success.set_title(
        "Training success rate per iteration (share of rollouts verified correct)"
        + ("\ndashed: held-out success (step 0: after the warm-up; X: the base model)" if held_out else "")
    )
    success.set_ylabel("success rate")
    success.yaxis.set_major_formatter(PercentFormatter())
    top = max(
        [100 * it.success_rate for n in runs for it in n.source.iterations]
        + [100 * p.average for n in runs for p in (*n.source.held_out, *n.source.stages)]
    )
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
    """Consecutive iterations on the same environment version: (first step, last step, version)."""
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
    count = max(2, *(len(n.source.interfaces) for n in runs))  # one scale for every lane: v1 is one colour
    for lane, named in enumerate(runs):
        run = named.source
        order = {v.version: i for i, v in enumerate(run.interfaces)}
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
    ax.set_title("Environment version the rollouts of each iteration saw (darker = older; 'next': made, not used yet)")
    return _save(fig, out / "interface_timeline.png")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "_", text.lower()).strip("_") or "suite"
