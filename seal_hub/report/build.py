"""`seal-hub report`: run and evaluation directories in, `report.md` and its PNG figures out.

`build_report` loads every source first (so bad input fails before anything is written), names them, draws
what they hold and writes one Markdown page that embeds the figures by relative path, so the output folder can
be moved, zipped or pushed as a whole. Figures that have nothing to show (no run with a finished iteration, no
evaluation) are left out and the page says so; the page is written last, atomically. Each suite's evaluation
figure has a bar per evaluation, or, where the caller groups them (`eval_series`: the experiment's settings, mean
and interval over seeds), one per group.

Not covered: producing the sources (training: `seal-hub train` / `recipes/seal.py`; evaluation: `seal-hub eval`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from seal_hub.atomic import write_text
from seal_hub.report import eval_plots, plots, tables
from seal_hub.report.eval_plots import EvalSeries
from seal_hub.report.inputs import EvalRecord, ReportInputError, RunRecord, load_input
from seal_hub.report.naming import Named, name_sources
from seal_hub.report.paper import paper_numbers

REPORT_FILE = "report.md"


@dataclass(frozen=True)
class Report:
    path: Path  # report.md
    plots: tuple[Path, ...]
    sources: tuple[Named, ...]


def parse_source_argument(argument: str) -> tuple[str | None, str]:
    """`NAME=DIR` -> (NAME, DIR); `DIR` -> (None, DIR). A DIR that exists as given wins over splitting."""
    if "=" in argument and not Path(argument).exists():
        name, path = argument.split("=", 1)
        if not name.strip():
            raise ReportInputError(f"{argument!r}: the name before '=' is empty (write NAME=DIR or just DIR)")
        return name.strip(), path
    return None, argument


def _figure(path: Path | None, caption: str) -> list[str]:
    return [f"![{caption}]({path.name})", "", f"*{caption}*", ""] if path is not None else []


def _run_section(runs: list[Named], out: Path, figures: list[Path]) -> list[str]:
    lines = ["## Training runs", "", tables.runs_table(runs), ""]
    drawn = [
        (plots.plot_success(runs, out), "Success rate and mean rollout weight per iteration."),
        (plots.plot_label_profile(runs, out), "Share of each turn label per iteration (stacked)."),
        (plots.plot_rho(runs, out), "rho per label over training."),
        (plots.plot_interface_timeline(runs, out), "Environment version used by each iteration's rollouts."),
    ]
    if all(path is None for path, _ in drawn):
        lines += ["No run has a finished iteration yet: nothing to plot.", ""]
    for path, caption in drawn:
        figures += [path] if path is not None else []
        lines += _figure(path, caption)
    if any(n.source.iterations for n in runs):
        lines += ["### rho at the last iteration", "", tables.rho_table(runs), ""]
    by_category = tables.category_table(runs)
    if by_category:
        lines += ["### Training success per category at the last iteration", "", by_category, ""]
    for named in runs:
        if named.source.interfaces:
            lines += [f"### Environment versions: {named.name}", "", tables.interface_table(named.source), ""]
    return lines


def _eval_section(
    evals: list[Named], out: Path, figures: list[Path], grouped: Mapping[str, Sequence[EvalSeries]]
) -> list[str]:
    lines = ["## Evaluations", ""]
    paper = paper_numbers()
    suites: dict[str, list[Named]] = {}
    for named in evals:
        suites.setdefault(named.source.results.suite, []).append(named)
    for suite, members in suites.items():
        compare = paper if suite == paper.suite else None
        lines += [f"### Suite `{suite}`", "", "Success rate in percent (passed/total).", ""]
        lines += [tables.eval_table(members, compare), ""]
        by_setting = bool(grouped.get(suite))
        series = list(grouped[suite]) if by_setting else [eval_plots.series_of(n) for n in members]
        path = eval_plots.plot_evals(suite, series, out)
        figures += [path] if path is not None else []
        how = "each setting's mean over seeds, whiskers: 95% interval" if by_setting else "side by side"
        lines += _figure(path, f"{suite}: success per category and average ({how}).")
        labels = tables.eval_label_table(members)
        if labels:
            lines += ["Turn labels of the evaluated episodes (share of labelled turns):", "", labels, ""]
        if compare is not None:
            lines += ["#### Beside the paper", "", f"The paper's {compare.metric}.", ""]
            lines += [tables.paper_table(members, compare), ""]
            lines += [f"Source: {compare.citation()}.", ""]
            path = eval_plots.plot_paper(series, compare, out)
            figures += [path] if path is not None else []
            lines += _figure(path, "Our averages (blue) beside the paper's (grey).")
    return lines


def build_report(
    arguments: Sequence[tuple[str | None, str | Path]],
    out: str | Path,
    eval_series: Mapping[str, Sequence[EvalSeries]] | None = None,
) -> Report:
    """The report of these (name or None, directory) sources in `out`; `eval_series`: suite -> the series its
    evaluation figures draw instead of one per evaluation (the experiment's settings over seeds)."""
    if not arguments:
        raise ReportInputError("give at least one run or evaluation directory")
    loaded = [(name, load_input(path)) for name, path in arguments]
    named = name_sources(loaded)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    runs = [n for n in named if isinstance(n.source, RunRecord)]
    evals = [n for n in named if isinstance(n.source, EvalRecord)]
    figures: list[Path] = []
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    lines = ["# SEAL report", "", f"Made by `seal-hub report` at {stamp} from:", ""]
    lines += [
        f"- **{n.name}**: {'run' if isinstance(n.source, RunRecord) else 'evaluation'} `{n.source.path}`"
        for n in named
    ]
    lines.append("")
    notes = [f"- {n.name}: {note}" for n in named for note in n.source.notes]
    if notes:
        lines += ["Notes on the inputs:", "", *notes, ""]
    if runs:
        lines += _run_section(runs, out, figures)
    if evals:
        lines += _eval_section(evals, out, figures, eval_series or {})
    report = write_text(out / REPORT_FILE, "\n".join(lines).rstrip() + "\n")
    return Report(report, tuple(figures), tuple(named))
