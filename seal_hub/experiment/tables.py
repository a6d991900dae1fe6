"""The experiment's page: every setting's mean and 95% interval over seeds (and per category), paired by seed the
RL phase over its warm-up and SEAL minus vanilla, on bfcl the paper's Table 1 and ablation table with its numbers
beside ours, OOD suites, and `seal-hub report`'s plots of every run's training and, one bar per setting with the
tables' means and intervals (`setting_series`), of the evaluations.

Not covered: drawing (`seal_hub.report`), the paper's numbers themselves (`seal_hub.report.paper`, package data).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seal_hub.atomic import write_text
from seal_hub.experiment.config import ARMS, MANIFEST, REPORT_DIR, TABLE_FILE, ExperimentConfig
from seal_hub.experiment.intervals import MeanInterval, mean_interval
from seal_hub.experiment.run import WARMUP_LABEL, ArmResult, model_id_of

if TYPE_CHECKING:
    from seal_hub.report.eval_plots import EvalSeries


def _scores(path: Path | None) -> dict[str, Any] | None:
    from seal_hub.evaluation.results import RESULTS_JSON

    if path is None or not (path / RESULTS_JSON).exists():
        return None
    results = json.loads((path / RESULTS_JSON).read_text(encoding="utf-8"))
    model = (results.get("model") or {}).get("id")
    return {
        "average": results["scores"]["average"],
        "num_tasks": results["num_tasks"],
        "model": model,
        **results["scores"],
    }


def _by_label(results: Sequence[ArmResult], suite: str) -> dict[str, list[tuple[int | None, dict[str, Any]]]]:
    """Each setting's (seed, scores) on `suite`, in the results' order (settings without a score left out)."""
    grouped: dict[str, list[tuple[int | None, dict[str, Any]]]] = {}
    for r in results:
        scores = _scores(r.evals.get(suite))
        if scores is not None:
            grouped.setdefault(r.label, []).append((r.subject.seed, scores))
    return grouped


def _intervals(runs: list[tuple[int | None, dict[str, Any]]]) -> tuple[dict[str, MeanInterval], MeanInterval]:
    """One setting's per-category means and 95% intervals over its runs (each category over the runs that
    scored it, in the results' order), and its average's."""
    categories = dict.fromkeys(c for _, s in runs for c in s["per_category"])
    per_category = {
        c: mean_interval([s["per_category"][c]["success_rate"] for _, s in runs if c in s["per_category"]])
        for c in categories
    }
    return per_category, mean_interval([s["average"] for _, s in runs])


def setting_series(results: Sequence[ArmResult], suite: str) -> list[EvalSeries]:
    """Every setting on `suite` as one series of the report's evaluation figure: the table's means and intervals."""
    from seal_hub.report.eval_plots import EvalSeries

    series = []
    for label, runs in _by_label(results, suite).items():
        per_category, average = _intervals(runs)
        model = next((s["model"] for _, s in runs if s["model"]), None)
        tasks = tuple(s["num_tasks"] for _, s in runs)
        series.append(EvalSeries(label, per_category, average, len(runs), model, tasks))
    return series


def _cell(runs: list[tuple[int | None, dict[str, Any]]] | None) -> str:
    if not runs:
        return ""
    tasks = sorted({s["num_tasks"] for _, s in runs})
    return f"{mean_interval([s['average'] for _, s in runs]).text(2)} ({'/'.join(map(str, tasks))} tasks)"


def seeds_table(results: Sequence[ArmResult], suite: str) -> list[str]:
    """Every setting on `suite`: its runs, the mean and 95% interval of the average, each category's mean."""
    from seal_hub.report.tables import markdown_table

    grouped = _by_label(results, suite)
    if not grouped:
        return []
    categories = sorted({c for runs in grouped.values() for _, s in runs for c in s["per_category"]})
    rows = []
    for label, runs in grouped.items():
        seeds = ", ".join(str(seed) for seed, _ in runs if seed is not None) or "-"
        per_category, average = _intervals(runs)
        rows.append(
            [label, seeds, str(average)]
            + [f"{per_category[c].mean:.1f}" if c in per_category else "" for c in categories]
        )
    tasks = sorted({s["num_tasks"] for runs in grouped.values() for _, s in runs})
    lines = [
        f"## Every setting on {suite} (held-out test tasks: {'/'.join(map(str, tasks))})",
        "",
        "Success rate in percent: the mean over seeds of the average over categories, ± the half-width of its 95% "
        "t interval (a single run: no interval); per category: the mean over seeds.",
        "",
        markdown_table(["setting", "seeds", "avg (95% interval)", *categories], rows),
        "",
    ]
    return lines + _difference(grouped)


def _paired(grouped: dict[str, list[tuple[int | None, dict[str, Any]]]], minuend: str, subtrahend: str):
    """`minuend` minus `subtrahend` per seed (the seeds both have), as a mean and 95% interval; None: no pair."""
    first = {seed: s["average"] for seed, s in grouped.get(minuend, [])}
    second = {seed: s["average"] for seed, s in grouped.get(subtrahend, [])}
    paired = [first[seed] - second[seed] for seed in first if seed in second]
    return mean_interval(paired) if paired else None


def _line(name: str, d: MeanInterval) -> str:
    """`NAME: +D.D points (95% interval L.L to H.H, N seeds)` (one seed: no interval)."""
    if d.half_width is None:
        return f"{name}: {d.mean:+.1f} points (one seed, no interval)"
    return f"{name}: {d.mean:+.1f} points (95% interval {d.low:.1f} to {d.high:.1f}, {d.n} seeds)"


def _difference(grouped: dict[str, list[tuple[int | None, dict[str, Any]]]]) -> list[str]:
    """Paired by seed (a seed's arms share its warm-up, its tasks and its budget): what the RL phase adds to the
    warm-up it starts from, and SEAL minus vanilla RL. Both lines keep this form: other tools read them."""
    lines = []
    over_warmup = _paired(grouped, "SEAL", WARMUP_LABEL)
    if over_warmup is not None:
        lines.append(_line("RL over warm-up (seal)", over_warmup))
    seal_vanilla = _paired(grouped, "SEAL", "vanilla RL")
    if seal_vanilla is not None:
        lines.append(_line("SEAL minus vanilla", seal_vanilla))
    return [*lines, ""] if lines else []


def experiment_tables(config: ExperimentConfig, results: Sequence[ArmResult]) -> str:
    """Every setting with its interval over seeds; on bfcl, the paper's Table 1 and ablation beside ours; OOD."""
    from seal_hub.report.paper import paper_numbers
    from seal_hub.report.tables import markdown_table

    main_suite = config.suites[0]
    lines = seeds_table(results, main_suite)
    paper = paper_numbers()
    if main_suite == paper.suite:  # the paper's numbers name the suite they were measured on
        lines += _paper_tables(config, _by_label(results, main_suite), paper, markdown_table)
    ood = config.suites[1:]
    if ood:
        grouped = {s: _by_label(results, s) for s in ood}
        labels = list(dict.fromkeys(r.label for r in results))
        rows = [[label, *(_cell(grouped[s].get(label)) or "not run" for s in ood)] for label in labels]
        lines += ["## Out-of-distribution suites (ours; average success in percent)", ""]
        lines += [markdown_table(["setting", *ood], rows), ""]
    return "\n".join(lines)


def _paper_tables(config: ExperimentConfig, bfcl, paper, markdown_table) -> list[str]:
    """Table 1 (base and SEAL) and the ablation table: the paper's averages beside ours (mean over seeds)."""
    model = model_id_of(config.plan()["model"])
    counts = {s["num_tasks"] for runs in bfcl.values() for _, s in runs}
    lines = []
    if counts and counts != {paper.num_tasks}:
        lines += [
            f"**Not comparable with the paper:** ours are on {', '.join(map(str, sorted(counts)))} of its "
            f"{paper.num_tasks} held-out tasks.",
            "",
        ]
    main = paper.for_model(model)
    paper_main = {r.setting: r.average for r in main}
    rows = [
        [model, setting, f"{paper_main[setting]:.2f}" if setting in paper_main else "", _cell(bfcl.get(setting))]
        for setting in ("base", "SEAL")
    ]
    lines += ["## Table 1: main result", "", markdown_table(["model", "setting", "paper", "ours"], rows), ""]
    if not main:
        lines += [
            f"The paper reports no {model}; its rows: {', '.join(sorted({r.model for r in paper.results}))}.",
            "",
        ]
    ablation = {r.setting: r for r in paper.results if r.table == "ablation"}
    paper_model = next(iter(ablation.values())).model if ablation else ""
    rows = [
        [arm.label, f"{ablation[arm.label].average:.2f}" if arm.label in ablation else "", _cell(bfcl.get(arm.label))]
        for arm in ARMS
        if arm.name in config.arms
    ]
    return lines + [
        "## Ablation",
        "",
        markdown_table(["setting", f"paper ({paper_model})", f"ours ({model})"], rows),
        "",
    ]


def write_report(config: ExperimentConfig, results: Sequence[ArmResult]) -> Path:
    """`seal-hub report` over every arm's run and evaluations, and `experiment.md` with the paper's tables."""
    from seal_hub.report import build_report

    out = Path(config.output_dir) / REPORT_DIR
    sources: list[tuple[str | None, str | Path]] = []
    main_suite = config.suites[0]
    for r in results:
        seed = f" · seed {r.subject.seed}" if r.subject.seed is not None and len(config.seeds) > 1 else ""
        if r.arm is not None:
            sources.append((f"{r.label}{seed} (training)", Path(config.output_dir) / r.subject.folder))
        sources += [
            (f"{r.label}{seed}" if suite == main_suite else f"{r.label}{seed} · {suite}", path)
            for suite, path in r.evals.items()
        ]
    report = build_report(sources, out, {suite: setting_series(results, suite) for suite in config.suites})
    table = out / TABLE_FILE
    manifest = json.loads((Path(config.output_dir) / MANIFEST).read_text(encoding="utf-8"))
    lines = [
        "# The paper's experiment",
        "",
        f"Base config `{manifest['base_config']}`, model `{manifest['model']}`; every arm on the same budget: "
        + ", ".join(f"{k} {'unset' if v is None else v}" for k, v in manifest["budget"].items())
        + "; seeds: "
        + ", ".join(f"{k} {'unset' if v is None else v}" for k, v in manifest["seeds"].items())
        + "."
        + (
            " Every arm of a seed starts from that seed's SFT warm-up (warmup/seed-K)."
            if manifest["shared_warmup"]
            else ""
        )
        + f" Plots and the training curves: [{report.path.name}]({report.path.name}).",
        "",
        experiment_tables(config, results),
        f"Source of the paper's numbers: {_citation()}.",
    ]
    return write_text(table, "\n".join(lines).rstrip() + "\n")


def _citation() -> str:
    from seal_hub.report.paper import paper_numbers

    return paper_numbers().citation()
