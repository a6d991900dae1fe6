"""The report's Markdown tables: runs at a glance, each run's environment versions, the final rho, evaluations
side by side per suite, and (suite `bfcl`) our averages beside the paper's.

Design choice: every function returns a Markdown string built from typed records, so the tables can be
tested as text and reused (the CLI, a notebook, a Space). Numbers are formatted here and only here:
success rates of training as percent with one decimal, evaluation scores as the paper prints them (percent,
two decimals).

Not covered: the figures (`seal_hub.report.plots`), the page around the tables (`seal_hub.report.build`).
"""

from __future__ import annotations

from collections.abc import Sequence

from seal_hub.diagnosis import Label
from seal_hub.report.inputs import EvalRecord, RunRecord
from seal_hub.report.naming import Named, model_short, variant
from seal_hub.report.paper import PaperNumbers


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    def cell(value: object) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _pct(fraction: float) -> str:
    return f"{100 * fraction:.1f}%"


def _held_out_cell(run: RunRecord) -> str:
    if not run.held_out:
        return "-"
    last = run.held_out[-1]
    return f"{_pct(last.success_rate)} of {last.num_tasks} (step {last.step})"


def runs_table(runs: Sequence[Named]) -> str:
    rows = []
    for named in runs:
        run: RunRecord = named.source
        its = run.iterations
        used = sorted({it.interface_version for it in its}, key=lambda v: (len(v), v))
        rows.append(
            [
                named.name,
                f"`{run.path.name}`",
                model_short(run.config.get("model")),
                variant(run.config),
                f"{its[0].step}-{its[-1].step} ({len(its)})" if its else "none",
                " → ".join(_pct(it.success_rate) for it in (its[0], its[-1])) if its else "-",
                _pct(max(it.success_rate for it in its)) if its else "-",
                f"{its[-1].mean_weight:.3f}" if its else "-",
                _held_out_cell(run),
                f"{len(run.interfaces)} made, {len(used)} used" if run.interfaces else "none",
                ", ".join(str(c) for c in run.checkpoints) or "none",
            ]
        )
    headers = [
        "run",
        "directory",
        "model",
        "variant",
        "iterations (n)",
        "success first → last",
        "best",
        "last mean weight",
        "held-out success (step)",
        "environment versions",
        "checkpoints",
    ]
    return markdown_table(headers, rows)


def interface_table(run: RunRecord) -> str:
    first_use: dict[str, int] = {}
    for it in run.iterations:
        first_use.setdefault(it.interface_version, it.step)
    rows = [
        [
            v.version,
            v.parent or "-",
            v.created_at,
            first_use.get(v.version, "not used yet"),
            "; ".join(v.components) or "nothing (the null interface)",
        ]
        for v in run.interfaces
    ]
    return markdown_table(["version", "parent", "created", "first used at step", "adds"], rows)


def rho_table(runs: Sequence[Named]) -> str:
    """rho of every label at each run's last iteration (the table the rollouts of that step were weighted by)."""
    with_data = [n for n in runs if n.source.iterations]
    rows = [
        [f"`{label}`", *(f"{n.source.iterations[-1].rho.get(str(label), float('nan')):.3f}" for n in with_data)]
        for label in Label
    ]
    return markdown_table(["label", *(n.name for n in with_data)], rows)


def category_table(runs: Sequence[Named]) -> str:
    """Training success per task category at each run's last iteration (from its diagnoses file)."""
    with_data = [n for n in runs if n.source.iterations and n.source.iterations[-1].category_success]
    seen = {c for n in with_data for c in n.source.iterations[-1].category_success}
    cats = sorted(seen)  # by name: any suite's categories (the report reads no suite)
    rows = []
    for named in with_data:
        last = named.source.iterations[-1]
        cells = [
            f"{_pct(p / t)} ({p}/{t})" if (p, t) != (0, 0) else "-"
            for p, t in (last.category_success.get(c, (0, 0)) for c in cats)
        ]
        rows.append([named.name, last.step, *cells])
    return markdown_table(["run", "step", *cats], rows) if rows else ""


def eval_label_table(evals: Sequence[Named]) -> str:
    """Share of each turn label over the evaluated episodes, evaluations side by side (where diagnosed)."""
    with_data = [n for n in evals if n.source.label_counts]
    if not with_data:
        return ""
    known = [str(label) for label in Label]
    seen = {label for n in with_data for label in n.source.label_counts}
    labels = [label for label in known if label in seen] + sorted(seen - set(known))
    totals = [sum(n.source.label_counts.values()) for n in with_data]
    rows = [
        [
            f"`{label}`",
            *(_pct(n.source.label_counts.get(label, 0) / total) for n, total in zip(with_data, totals, strict=True)),
        ]
        for label in labels
    ]
    rows.append(["labelled turns", *totals])
    return markdown_table(["label", *(n.name for n in with_data)], rows)


def categories(evals: Sequence[Named]) -> list[str]:
    """Every category of these evaluations, in the order their results list them."""
    seen: dict[str, None] = {}
    for named in evals:
        seen.update(dict.fromkeys(named.source.results.scores.per_category))
    return list(seen)


def eval_table(evals: Sequence[Named], paper: PaperNumbers | None = None) -> str:
    """One suite's evaluations side by side: success per category and the average, in percent."""
    cats = categories(evals)
    rows = []
    for named in evals:
        r = named.source.results
        scores = r.scores.per_category
        row = [named.name]
        row += [
            f"{scores[c].success_rate:.2f} ({scores[c].passed}/{scores[c].total})" if c in scores else "-"
            for c in cats
        ]
        row += [f"**{r.scores.average:.2f}**", r.num_tasks, r.split, f"`{named.source.path.name}`"]
        if paper is not None:
            same = paper.for_model(r.model.id)
            row.append(" → ".join(f"{p.setting} {p.average:.2f}" for p in same) or "-")
        rows.append(row)
    headers = ["evaluation", *cats, "average", "tasks", "split", "directory"]
    if paper is not None:
        headers.append("paper, same base model")
    return markdown_table(headers, rows)


def paper_table(evals: Sequence[Named], paper: PaperNumbers) -> str:
    """The paper's averages (main table and ablations) and ours, one list, for the same metric."""
    rows = [[f"paper ({p.table})", p.model, p.setting, f"{p.average:.2f}"] for p in paper.results]
    for named in evals:
        r: EvalRecord = named.source
        tasks = r.results.num_tasks
        caveat = (
            "" if tasks == paper.num_tasks else f" ({tasks} of the paper's {paper.num_tasks} tasks: not comparable)"
        )
        model = model_short(r.results.model.id)
        rows.append(["this report", model, named.name + caveat, f"{r.results.scores.average:.2f}"])
    return markdown_table(["from", "model", "setting", "average"], rows)
