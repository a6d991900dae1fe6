"""The learning experiment's page, drawn from its records alone (`seal_hub.experiment.records`): the curves (dev
success per arm against step with the warm-up's level, training success), the test table per category, the paired
difference SEAL - plain GRPO with its 95% interval, the frozen warm-up under each interface version, and one line
other tools read:

    NAME held-out (N tasks): warm-up W% | plain GRPO P% after K steps | SEAL S% after K steps |
        SEAL - plain D points (95% interval L to U)         (one line; wrapped here)

Success rates are the unweighted mean of the categories' rates (the paper's avg); the interval is the paired
bootstrap's (`seal_hub.experiment.paired`). Because it reads only the committed records, the page can be
rebuilt anywhere, and arms recorded on different machines appear together. Figures follow `seal_hub.report.plots`
(matplotlib's object API, no pyplot, legends outside the data).

Not covered: making the records (`seal_hub.experiment.learning`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from seal_hub.atomic import write_text
from seal_hub.experiment.paired import paired_comparison, paired_table, verdicts_of

CURVES_PNG, PAGE = "learning_curves.png", "learning.md"
PLAIN, SEAL = "vanilla", "seal"
ROLLING = 10  # steps in the training-success curve's moving mean


@dataclass(frozen=True)
class Records:
    warmups: dict[int, dict[str, Any]]  # seed -> warm-up record
    arms: dict[tuple[str, int], dict[str, Any]]  # (arm, seed) -> arm record
    effects: dict[int, dict[str, Any]]  # seed -> interface-effect record

    @classmethod
    def read(cls, folder: str | Path) -> Records:
        warmups, arms, effects = {}, {}, {}
        for path in sorted(Path(folder).glob("*.json")):
            record = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(record, dict) or not str(record.get("schema", "")).startswith("seal_hub.experiment"):
                continue
            name = record.get("name", "")
            if name.startswith("warmup-"):
                warmups[int(record["seed"])] = record
            elif name.startswith("interface-effect-"):
                effects[int(record["seed"])] = record
            elif "arm" in record:
                arms[(record["arm"], int(record["seed"]))] = record
        return cls(warmups, arms, effects)


def average(summary: dict[str, Any]) -> float:
    return float(summary["scores"]["average"])


def steps_of(record: dict[str, Any]) -> int:
    return max((line["step"] for line in record.get("steps", [])), default=0)


def moving_mean(values: list[float], window: int = ROLLING) -> list[float]:
    return [
        sum(values[max(0, i - window + 1) : i + 1]) / len(values[max(0, i - window + 1) : i + 1])
        for i in range(len(values))
    ]


def draw_curves(records: Records, seed: int, path: Path) -> Path | None:
    """Dev success against step per arm (from the warm-up's dev level at step 0), and training success (a moving
    mean of ROLLING steps) with the share of informative groups, one colour per arm."""
    arms = [(name, r) for (name, s), r in sorted(records.arms.items()) if s == seed and r.get("steps")]
    if not arms:
        return None
    arms.sort(key=lambda item: (item[0] != PLAIN, item[0] != SEAL, item[0]))
    warmup = records.warmups.get(seed, {})
    start = average(warmup["dev"]) if "dev" in warmup else None
    fig = Figure(figsize=(10.0, 7.2))
    dev_axes, train_axes = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    colors = {PLAIN: "#7f7f7f", SEAL: "#d62728"}
    palette = iter(["#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"])
    for name, record in arms:
        color = colors.get(name) or next(palette)
        points = [(0, start)] if start is not None else []
        points += [(line["step"], line["dev"]["average"]) for line in record["steps"] if "dev" in line]
        if points:
            xs, ys = zip(*points, strict=True)
            dev_axes.plot(xs, ys, marker="o", color=color, label=record.get("label", name), linewidth=2)
        lines = record["steps"]
        xs = [line["step"] for line in lines]
        success = moving_mean([100 * line["success_rate"] for line in lines])
        train_axes.plot(xs, success, color=color, linewidth=2, label=f"{record.get('label', name)}: success")
        groups = [line.get("groups") or {} for line in lines]
        if all(g.get("drawn") for g in groups):
            informative = moving_mean([100 * g["kept"] / g["drawn"] for g in groups])
            label = f"{record.get('label', name)}: informative groups"
            train_axes.plot(xs, informative, color=color, linewidth=1, linestyle=":", label=label)
    if start is not None:
        dev_axes.axhline(start, color="black", linestyle="--", linewidth=1, label=f"SFT warm-up ({start:.1f}%)")
    dev_axes.set_ylabel("dev success, avg of categories (%)")
    tasks = next((line["dev"].get("num_tasks") for _, r in arms for line in r["steps"] if "dev" in line), None)
    size = f"{tasks} tasks, " if tasks else ""
    dev_axes.set_title(f"Dev split ({size}never trained on), greedy, original interface (seed {seed})")
    dev_axes.grid(alpha=0.3)
    dev_axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=10)
    train_axes.set_ylabel(f"training rollouts (%),\n{ROLLING}-step mean")
    train_axes.set_xlabel("GRPO step")
    train_axes.grid(alpha=0.3)
    train_axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9)
    train_axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path


def contract_line(name: str, records: Records, seed: int) -> str | None:
    """The one line (module docstring), or None until the warm-up and both arms hold a test evaluation."""
    warmup, plain, seal = (
        records.warmups.get(seed, {}),
        records.arms.get((PLAIN, seed)),
        records.arms.get((SEAL, seed)),
    )
    if not (plain and seal and "test" in warmup and "test" in plain and "test" in seal):
        return None
    rows = paired_comparison(verdicts_of(seal["test"]), verdicts_of(plain["test"]))
    avg = rows[-1]
    return (
        f"{name} held-out ({avg.tasks} tasks): warm-up {average(warmup['test']):.1f}% | plain GRPO "
        f"{average(plain['test']):.1f}% after {steps_of(plain)} steps | SEAL {average(seal['test']):.1f}% after "
        f"{steps_of(seal)} steps | SEAL - plain {avg.difference:+.1f} points (95% interval {avg.low:+.1f} to "
        f"{avg.high:+.1f})"
    )


def test_table(records: Records, seed: int) -> list[str]:
    """Each subject's test success per category (passed/total) and avg."""
    subjects = [("SFT warm-up", records.warmups.get(seed, {}))]
    subjects += [(r.get("label", a), r) for (a, s), r in sorted(records.arms.items()) if s == seed]
    subjects = [(label, r) for label, r in subjects if "test" in r]
    if not subjects:
        return []
    categories = list(subjects[0][1]["test"]["scores"]["per_category"])
    lines = ["| test split | " + " | ".join([*categories, "avg"]) + " |", "|---" * (len(categories) + 2) + "|"]
    for label, record in subjects:
        per = record["test"]["scores"]["per_category"]
        cells = [f"{per[c]['passed']}/{per[c]['total']}" if c in per else "-" for c in categories]
        lines.append(f"| {label} | " + " | ".join([*cells, f"**{average(record['test']):.1f}%**"]) + " |")
    return lines


def effect_table(records: Records, seed: int) -> list[str]:
    """The frozen warm-up on dev under each interface version the SEAL arm made."""
    effect = records.effects.get(seed, {}).get("versions", {})
    warmup = records.warmups.get(seed, {})
    rows = []
    if "dev" in warmup:
        rows.append(("original (null)", "-", warmup["dev"]))
    rows += [(version, str(point["step"]), point) for version, point in effect.items()]
    if len(rows) < 2:
        return []
    return summary_table(rows, "interface", "SEAL step")


def trained_effect_table(records: Records, seed: int) -> list[str]:
    """SEAL's final policy on dev under the original interface (its last dev point) and under the last version it
    trained under."""
    trained = records.effects.get(seed, {}).get("trained", {})
    steps = [line for line in records.arms.get((SEAL, seed), {}).get("steps", []) if "dev" in line]
    if not trained or not steps:
        return []
    last = steps[-1]
    original = {"scores": {"average": last["dev"]["average"], "per_category": per_category(last["dev"])}}
    rows = [("original (null)", str(last["step"]), original)]
    rows += [(version, str(point["step"]), point) for version, point in trained.items()]
    return summary_table(rows, "interface", "policy after step")


def per_category(dev: dict[str, Any]) -> dict[str, dict[str, int]]:
    """A step's dev point (category -> [passed, total]) as an evaluation summary's categories."""
    return {c: {"passed": p, "total": t} for c, (p, t) in dev["per_category"].items()}


def summary_table(rows: list[tuple[str, str, dict[str, Any]]], first: str, second: str) -> list[str]:
    categories = list(rows[0][2]["scores"]["per_category"])
    lines = [
        f"| {first} | {second} | " + " | ".join([*categories, "avg"]) + " |",
        "|---" * (len(categories) + 3) + "|",
    ]
    for version, step, summary in rows:
        per = summary["scores"]["per_category"]
        cells = [f"{per[c]['passed']}/{per[c]['total']}" if c in per else "-" for c in categories]
        lines.append(f"| {version} | {step} | " + " | ".join([*cells, f"{average(summary):.1f}%"]) + " |")
    return lines


def category_order(records: Records, seed: int, seen: list[str]) -> list[str]:
    """`seen` in the suite's order (the one its evaluations record), categories they do not name last."""
    warmup = records.warmups.get(seed, {})
    summary = warmup.get("test") or warmup.get("dev") or {}
    known = list(summary.get("scores", {}).get("per_category", {}))
    return [c for c in known if c in seen] + [c for c in seen if c not in known]


def dev_table(records: Records, seed: int) -> list[str]:
    """Each arm's dev evaluations, per category (passed of the category's tasks), from the warm-up's on."""
    warmup = records.warmups.get(seed, {}).get("dev")
    rows = []
    for (arm, s), record in sorted(records.arms.items()):
        for line in record.get("steps", []) if s == seed else []:
            if "dev" in line:
                rows.append((record.get("label", arm), line["step"], line["dev"]))
    if not rows:
        return []
    categories = category_order(records, seed, list(rows[0][2]["per_category"]))
    lines = ["| arm | step | " + " | ".join([*categories, "avg"]) + " |", "|---" * (len(categories) + 3) + "|"]
    if warmup:
        per = warmup["scores"]["per_category"]
        cells = [str(per[c]["passed"]) if c in per else "-" for c in categories]
        lines.append("| SFT warm-up | 0 | " + " | ".join([*cells, f"{average(warmup):.1f}%"]) + " |")
    for label, step, point in rows:
        cells = [str(point["per_category"][c][0]) if c in point["per_category"] else "-" for c in categories]
        lines.append(f"| {label} | {step} | " + " | ".join([*cells, f"{point['average']:.1f}%"]) + " |")
    return lines


def training_table(records: Records, seed: int, window: int = ROLLING) -> list[str]:
    """Each arm's training rollouts passed per category, in windows of `window` steps (sampled at the training
    temperature: what GRPO saw), with the share of drawn groups whose rewards differed."""
    lines: list[str] = []
    for (arm, s), record in sorted(records.arms.items()):
        steps = record.get("steps", []) if s == seed else []
        if not steps or "per_category" not in steps[0]:
            continue
        categories = category_order(
            records, seed, list(dict.fromkeys(c for line in steps for c in line["per_category"]))
        )
        if not lines:
            head = " | ".join(categories)
            lines = [f"| arm | steps | {head} | informative groups |", "|---" * (len(categories) + 3) + "|"]
        for start in range(0, len(steps), window):
            chunk = steps[start : start + window]
            cells = []
            for c in categories:
                passed = sum(line["per_category"].get(c, [0, 0])[0] for line in chunk)
                total = sum(line["per_category"].get(c, [0, 0])[1] for line in chunk)
                cells.append(f"{passed}/{total}" if total else "-")
            kept = sum(line.get("groups", {}).get("kept", 0) for line in chunk)
            drawn = sum(line.get("groups", {}).get("drawn", 0) for line in chunk)
            span = f"{chunk[0]['step']}-{chunk[-1]['step']}"
            lines.append(f"| {record.get('label', arm)} | {span} | " + " | ".join([*cells, f"{kept}/{drawn}"]) + " |")
    return lines


def write_learning_report(name: str, records_dir: str | Path, seed: int = 0) -> Path:
    """`records_dir/learning.md` and its figure, from the records there; returns the page's path."""
    folder = Path(records_dir)
    records = Records.read(folder)
    lines = [f"# {name}: learning curves and the held-out comparison (seed {seed})", ""]
    line = contract_line(name, records, seed)
    lines += [line or "(the contract line appears once the warm-up and both arms hold a test evaluation)", ""]
    if draw_curves(records, seed, folder / CURVES_PNG):
        lines += [f"![learning curves]({CURVES_PNG})", ""]
    table = test_table(records, seed)
    if table:
        lines += ["## Test split, once per policy", "", *table, ""]
    plain, seal = records.arms.get((PLAIN, seed), {}), records.arms.get((SEAL, seed), {})
    if "test" in plain and "test" in seal:
        rows = paired_comparison(verdicts_of(seal["test"]), verdicts_of(plain["test"]))
        lines += ["## SEAL - plain GRPO, paired by task", "", *paired_table(rows, "SEAL", "plain"), ""]
    warmup = records.warmups.get(seed, {})
    for arm in (PLAIN, SEAL):
        record = records.arms.get((arm, seed), {})
        if "test" in record and "test" in warmup:
            rows = paired_comparison(verdicts_of(record["test"]), verdicts_of(warmup["test"]))
            label = record.get("label", arm)
            lines += [f"## {label} - warm-up, paired by task", "", *paired_table(rows, label, "warm-up"), ""]
    dev = dev_table(records, seed)
    if dev:
        lines += ["## Dev split over training, per category (tasks passed)", "", *dev, ""]
    training = training_table(records, seed)
    if training:
        lines += ["## Training rollouts passed per category, by 10 steps", "", *training, ""]
    effect = effect_table(records, seed)
    if effect:
        lines += ["## The interface alone: the frozen warm-up on dev under each version SEAL made", "", *effect, ""]
    trained = trained_effect_table(records, seed)
    if trained:
        lines += ["## SEAL's final policy on dev, without and with the interface it trained under", "", *trained, ""]
    lines += [*run_lines(records, seed), ""]
    page = folder / PAGE
    write_text(page, "\n".join(lines))
    return page


def run_lines(records: Records, seed: int) -> list[str]:
    """Where and how long each arm ran, and the warm-up's hash (and its rebuilds)."""
    lines = ["## Runs", ""]
    warmup = records.warmups.get(seed, {})
    if "sha256" in warmup:
        cpu = warmup.get("machine", {}).get("cpu", "?")
        lines.append(f"- warm-up: weights sha256 `{warmup['sha256'][:16]}` (built on {cpu})")
        for rebuild in warmup.get("rebuilds", []):
            same = "the same weights" if rebuild["same"] else f"different weights (`{rebuild['sha256'][:16]}`)"
            lines.append(f"  - rebuilt on {rebuild['machine'].get('cpu', '?')}: {same}")
    for (arm, s), record in sorted(records.arms.items()):
        if s != seed:
            continue
        where = record.get("machine", {})
        minutes = record.get("train_wall_seconds", 0) / 60
        lines.append(
            f"- {record.get('label', arm)}: {steps_of(record)} GRPO steps, {minutes:.0f} min of training on "
            f"{where.get('gpu') or where.get('cpu', '?')} ({where.get('cores', '?')} cores)"
        )
    return lines
