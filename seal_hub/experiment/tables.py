"""The experiment's page: the paper's Table 1 and ablation table with its numbers beside ours, OOD suites, and
`seal-hub report`'s plots of every arm's training and evaluations.

Not covered: drawing (`seal_hub.report`), the paper's numbers themselves (`seal_hub.report.paper`, package data).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seal_hub.experiment.config import ARMS, MANIFEST, REPORT_DIR, TABLE_FILE, ExperimentConfig
from seal_hub.experiment.run import ArmResult, model_id_of


def _scores(path: Path | None) -> dict[str, Any] | None:
    from seal_hub.evaluation.results import RESULTS_JSON

    if path is None or not (path / RESULTS_JSON).exists():
        return None
    results = json.loads((path / RESULTS_JSON).read_text(encoding="utf-8"))
    return {"average": results["scores"]["average"], "num_tasks": results["num_tasks"], **results["scores"]}


def _cell(scores: dict[str, Any] | None) -> str:
    return "" if scores is None else f"{scores['average']:.2f} ({scores['num_tasks']} tasks)"


def experiment_tables(config: ExperimentConfig, results: Sequence[ArmResult]) -> str:
    """Table 1 (base and SEAL) and the ablation table, the paper's averages beside ours, then OOD suites."""
    from seal_hub.report.paper import paper_numbers
    from seal_hub.report.tables import markdown_table

    paper = paper_numbers()
    model = model_id_of(config.plan()["model"])
    by_label = {r.label: r for r in results}
    bfcl = {label: _scores(r.evals.get("bfcl")) for label, r in by_label.items()}
    counts = {s["num_tasks"] for s in bfcl.values() if s is not None}
    lines = [
        "Success rate in percent: the average over the BFCL v3 multi-turn categories of the held-out split.",
        "",
    ]
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
    lines += [
        "## Ablation",
        "",
        markdown_table(["setting", f"paper ({paper_model})", f"ours ({model})"], rows),
        "",
    ]
    categories = sorted({c for s in bfcl.values() if s for c in s["per_category"]})
    if categories:
        rows = [
            [
                label,
                *(f"{s['per_category'][c]['success_rate']:.2f}" if c in s["per_category"] else "" for c in categories),
            ]
            for label, s in bfcl.items()
            if s is not None
        ]
        lines += ["## Ours per category (bfcl)", "", markdown_table(["setting", *categories], rows), ""]
    ood = [s for s in config.eval_suites if s != "bfcl"]
    if ood:
        rows = [[r.label, *(_cell(_scores(r.evals.get(s))) or "not run" for s in ood)] for r in results]
        lines += ["## Out-of-distribution suites (ours; average success in percent)", ""]
        lines += [markdown_table(["setting", *ood], rows), ""]
    return "\n".join(lines)


def write_report(config: ExperimentConfig, results: Sequence[ArmResult]) -> Path:
    """`seal-hub report` over every arm's run and evaluations, and `experiment.md` with the paper's tables."""
    from seal_hub.report import build_report

    out = Path(config.output_dir) / REPORT_DIR
    sources: list[tuple[str | None, str | Path]] = []
    for r in results:
        if r.arm is not None:
            sources.append((f"{r.label} (training)", Path(config.output_dir) / r.arm.name))
        sources += [(r.label if suite == "bfcl" else f"{r.label} · {suite}", path) for suite, path in r.evals.items()]
    report = build_report(sources, out)
    table = out / TABLE_FILE
    manifest = json.loads((Path(config.output_dir) / MANIFEST).read_text(encoding="utf-8"))
    lines = [
        "# The paper's experiment",
        "",
        f"Base config `{manifest['base_config']}`, model `{manifest['model']}`; every arm on the same budget: "
        + ", ".join(f"{k} {'unset' if v is None else v}" for k, v in manifest["budget"].items())
        + "; seeds: "
        + ", ".join(f"{k} {'unset' if v is None else v}" for k, v in manifest["seeds"].items())
        + f". Plots and the training curves: [{report.path.name}]({report.path.name}).",
        "",
        experiment_tables(config, results),
        f"Source of the paper's numbers: {_citation()}.",
    ]
    partial = table.with_name(TABLE_FILE + ".partial")
    partial.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    partial.replace(table)
    return table


def _citation() -> str:
    from seal_hub.report.paper import paper_numbers

    return paper_numbers().citation()
