"""`seal-hub report`: tables and plots from run and evaluation directories, names, the paper's numbers beside
ours, partial runs, and one-line errors on bad input. Inputs are synthetic (tests/helpers/report_fixtures.py) except
the last test, which reports on a real two-step tiny training run."""

from __future__ import annotations

import json
from importlib import resources

import pyarrow.parquet as pq
import pytest
from helpers.report_fixtures import write_eval, write_run
from PIL import Image

from seal_hub.cli import main
from seal_hub.report import ReportInputError, build_report, load_input, parse_source_argument
from seal_hub.report.naming import name_sources, variant
from seal_hub.report.paper import paper_numbers


def run_cli(capsys, *argv: str) -> tuple[int, list[str], str]:
    capsys.readouterr()  # drop what making the fixtures printed
    code = main(["report", *argv])
    captured = capsys.readouterr()
    return code, captured.out.strip().splitlines(), captured.err


@pytest.fixture()
def sources(tmp_path):
    root = tmp_path / "in"
    return {
        "seal": write_run(root / "seal-7b", steps=5, held_out_every=2),
        "vanilla": write_run(root / "vanilla-7b", steps=4, switches=(False, False, False), gain=0.3),
        "eval_base": write_eval(root / "eval-base", passed=(20, 8, 12, 16)),
        "eval_seal": write_eval(
            root / "eval-seal", adapter="me/seal-7b-adapter@iter-5", passed=(47, 31, 38, 33), diagnoses=True
        ),
        "eval_memory": write_eval(root / "eval-mem", suite="bfcl-memory", passed=(100, 120, 110), per_category=155),
    }


def test_report_writes_markdown_and_every_plot(sources, tmp_path, capsys):
    out = tmp_path / "out"
    code, lines, err = run_cli(capsys, *map(str, sources.values()), "--output_dir", str(out))
    assert code == 0, err
    expected = {
        "success.png",
        "label_profile.png",
        "rho.png",
        "interface_timeline.png",
        "eval_bfcl.png",
        "bfcl_vs_paper.png",
        "eval_bfcl-memory.png",
    }
    assert lines[-1] == f"report: {len(expected)} plots in {out}"
    assert {p.name for p in out.glob("*.png")} == expected
    for name in expected:
        with Image.open(out / name) as image:
            assert image.format == "PNG" and image.width >= 800 and image.height >= 300
    text = (out / "report.md").read_text()
    for name in expected:  # every plot is embedded
        assert f"]({name})" in text
    # training runs: derived names and their first/last success
    seal = load_input(sources["seal"])
    first, last = seal.iterations[0].success_rate, seal.iterations[-1].success_rate
    assert "SEAL · Qwen2.5-7B-Instruct" in text and "vanilla RL · Qwen2.5-7B-Instruct" in text
    assert f"{100 * first:.1f}% → {100 * last:.1f}%" in text
    # held-out evaluations made during training: the last one in the table
    held = json.loads((sources["seal"] / "held_out" / "step_000004.json").read_text())
    assert [p.step for p in seal.held_out] == [2, 4]
    assert f"{100 * held['success_rate']:.1f}% of {held['num_tasks']} (step 4)" in text
    # interface table: v1 and v2 of the SEAL run, first used after the steps that made them
    assert "| v1 | v0 |" in text and "| v2 | v1 |" in text
    # evaluations side by side, per suite, scores from results.json
    results = json.loads((sources["eval_seal"] / "results.json").read_text())
    for category, score in results["scores"]["per_category"].items():
        assert f"{score['success_rate']:.2f} ({score['passed']}/{score['total']})" in text, category
    assert f"**{results['scores']['average']:.2f}**" in text
    assert "### Suite `bfcl`" in text and "### Suite `bfcl-memory`" in text
    # training success per category at the last iteration, from the run's diagnoses file
    last = seal.iterations[-1]
    for category, (passed, total) in last.category_success.items():
        assert f"{100 * passed / total:.1f}% ({passed}/{total})" in text, category
    assert sum(total for _, total in last.category_success.values()) == last.rollouts
    # the evaluated episodes' turn labels, from the evaluation's diagnoses file
    rows = pq.read_table(sources["eval_seal"] / "diagnoses.parquet").column("labels").to_pylist()
    turns = [label for labels in rows for label in labels]
    assert f"| `pass` | {100 * turns.count('pass') / len(turns):.1f}% |" in text
    assert f"| labelled turns | {len(turns)} |" in text


def test_the_paper_numbers_come_from_package_data_with_their_source(sources, tmp_path):
    data = json.loads(resources.files("seal_hub.report").joinpath("data", "paper_bfcl.json").read_text())
    assert data["source"]["arxiv"] and data["source"]["url"].startswith("https://arxiv.org/")
    report = build_report([(None, sources["eval_base"]), (None, sources["eval_seal"])], tmp_path / "out")
    text = report.path.read_text()
    for row in data["results"]:
        assert f"| paper ({row['table']}) | {row['model']} | {row['setting']} | {row['average']:.2f} |" in text
    assert data["source"]["arxiv"] in text and data["source"]["title"] in text
    # the same base model's paper rows sit beside our evaluation in the bfcl table
    same = [r for r in data["results"] if r["table"] == "main" and r["hub_id"] == "Qwen/Qwen2.5-7B-Instruct"]
    assert " → ".join(f"{r['setting']} {r['average']:.2f}" for r in same) in text
    assert "not comparable" not in text  # both evaluations ran the paper's number of held-out tasks
    small = write_eval(tmp_path / "eval-small", passed=(1, 0, 2, 1), per_category=5)
    partial = build_report([(None, small)], tmp_path / "partial").path.read_text()
    assert f"(20 of the paper's {data['num_tasks']} tasks: not comparable)" in partial
    # a suite the paper has no numbers for gets no paper comparison
    other = build_report([(None, sources["eval_memory"])], tmp_path / "other")
    assert "Beside the paper" not in other.path.read_text() and "paper, same base model" not in other.path.read_text()
    assert [p.name for p in other.plots] == ["eval_bfcl-memory.png"]


def test_paper_rows_match_our_evaluations_by_model():
    paper = paper_numbers()
    assert {r.setting for r in paper.for_model("Qwen/Qwen2.5-7B-Instruct")} == {"base", "SEAL"}
    assert paper.for_model("/models/qwen2.5-3b-instruct/") and not paper.for_model("tiny")


def test_an_experiment_plot_has_one_bar_per_setting_with_the_tables_mean_and_interval(tmp_path):
    from matplotlib.container import BarContainer, ErrorbarContainer

    from seal_hub.experiment import ARMS_BY_NAME
    from seal_hub.experiment.run import BASE, ArmResult, Subject
    from seal_hub.experiment.tables import seeds_table, setting_series
    from seal_hub.report.eval_plots import eval_figure

    passed = {  # per seed: the four categories' passed of 100 (success rate in percent)
        "vanilla": [(20, 10, 12, 8), (30, 14, 12, 8), (40, 6, 12, 8)],
        "seal": [(30, 20, 12, 8), (32, 22, 12, 8), (46, 18, 12, 8)],
    }
    results = [ArmResult(BASE, {"bfcl": write_eval(tmp_path / "base", passed=(10, 5, 5, 4))})]
    for name, seeds in passed.items():
        arm = ARMS_BY_NAME[name]
        for seed, counts in enumerate(seeds):
            evaluation = write_eval(tmp_path / name / str(seed), passed=counts)
            results.append(ArmResult(Subject(arm.label, f"{name}/seed-{seed}", arm, seed), {"bfcl": evaluation}))
    series = setting_series(results, "bfcl")
    assert [(s.name, s.runs) for s in series] == [("base", 1), ("vanilla RL", 3), ("SEAL", 3)]
    base, vanilla, seal = series
    # vanilla's first category over seeds: 20, 30, 40: mean 30, sd 10, half-width t(0.975, 2) 4.303 * 10 / sqrt(3)
    assert vanilla.per_category["base"].mean == pytest.approx(30.0)
    assert vanilla.per_category["base"].half_width == pytest.approx(4.303 * 10 / 3**0.5)
    assert vanilla.per_category["long_context"].half_width == 0.0  # equal over seeds: a zero-width interval
    assert base.average.mean == pytest.approx(6.0) and base.average.half_width is None  # one run: none
    # the average's interval is the one the experiment's table prints
    table = "\n".join(seeds_table(results, "bfcl"))
    for s in series:
        assert f"| {s.name} | {'0, 1, 2' if s.runs > 1 else '-'} | {s.average} |" in table

    fig = eval_figure("bfcl", series)
    categories, averages = (sub.axes[0] for sub in fig.subfigs)
    bars = [c for c in categories.containers if isinstance(c, BarContainer)]
    assert [c.get_label() for c in bars] == ["base", "vanilla RL", "SEAL"]  # one bar per setting per category
    for container, s in zip(bars, series, strict=True):
        assert len(container) == 4
        assert [r.get_height() for r in container] == pytest.approx([v.mean for v in s.per_category.values()])
    assert len({tuple(c[0].get_facecolor()) for c in bars}) == 3  # a colour each
    whiskers = [c for c in categories.containers if isinstance(c, ErrorbarContainer)]
    assert len(whiskers) == 2  # the base model's single run has none
    segments = whiskers[0].lines[2][0].get_segments()  # vanilla RL's, category by category
    first = vanilla.per_category["base"]
    assert segments[0][:, 1] == pytest.approx([first.mean - first.half_width, first.mean + first.half_width])
    (average_bars,) = [c for c in averages.containers if isinstance(c, BarContainer)]
    assert [r.get_width() for r in average_bars] == pytest.approx([s.average.mean for s in series])
    texts = [t.get_text() for t in averages.texts]
    assert texts[0] == "6.00" and texts[2] == f"{seal.average.mean:.2f} ± {seal.average.half_width:.2f}  (3 seeds)"
    assert [t.get_text() for t in averages.get_yticklabels()] == ["base", "vanilla RL", "SEAL"]

    report = build_report(
        [(f"{r.label} {i}", path) for i, r in enumerate(results) for path in r.evals.values()],
        tmp_path / "out",
        {"bfcl": series},
    )
    assert "eval_bfcl.png" in {p.name for p in report.plots}
    assert "each setting's mean over seeds, whiskers: 95% interval" in report.path.read_text()


@pytest.mark.parametrize(
    ("switches", "expected"),
    [
        ((True, True, True), "SEAL"),
        ((False, False, False), "vanilla RL"),
        ((False, True, True), "w/o env adaptation"),
        ((True, False, True), "w/o reweighting"),
        ((True, True, False), "w/o closed loop"),
        ((False, True, False), "w/o env adaptation + closed loop"),
    ],
)
def test_variant_names_follow_the_ablation_switches(switches, expected):
    assert variant(dict(zip(("env_adaptation", "reweighting", "closed_loop"), switches, strict=True))) == expected
    assert variant({}) == "unknown variant"


def test_names_can_be_given_and_clashes_are_told_apart(tmp_path):
    a = load_input(write_run(tmp_path / "a", steps=1))
    b = load_input(write_run(tmp_path / "b", steps=1))
    named = name_sources([(None, a), (None, b), ("mine", a)])
    assert [n.name for n in named] == ["SEAL · Qwen2.5-7B-Instruct [a]", "SEAL · Qwen2.5-7B-Instruct [b]", "mine"]
    assert parse_source_argument(f"full SEAL={tmp_path / 'a'}") == ("full SEAL", str(tmp_path / "a"))
    assert parse_source_argument(str(tmp_path / "a")) == (None, str(tmp_path / "a"))
    with pytest.raises(ReportInputError, match="empty"):
        parse_source_argument(f"={tmp_path / 'a'}")


def test_a_name_given_on_the_command_line_is_used(sources, tmp_path, capsys):
    out = tmp_path / "out"
    code, _, _ = run_cli(capsys, f"ours={sources['seal']}", "--output_dir", str(out))
    assert code == 0 and "**ours**" in (out / "report.md").read_text()


def test_a_run_killed_mid_way_still_reports_what_exists(tmp_path, capsys):
    run = write_run(tmp_path / "killed", steps=3)
    (run / "iterations" / "step_000004.partial").mkdir()  # the step that was being written
    empty = tmp_path / "started"
    (empty / "interfaces").mkdir(parents=True)  # killed before its first iteration
    out = tmp_path / "out"
    code, lines, err = run_cli(capsys, str(run), str(empty), "--output_dir", str(out))
    assert code == 0, err
    assert lines[-1] == f"report: 4 plots in {out}"
    text = (out / "report.md").read_text()
    assert "step_000004.partial" in text and "no finished iteration yet" in text
    assert load_input(run).iterations[-1].step == 3


def test_held_out_evaluations_a_resume_rolled_back_are_ignored(tmp_path):
    run = write_run(tmp_path / "run", steps=4, held_out_every=2)
    for folder in ("step_000003", "step_000004"):  # a resume from checkpoint 2 removes later iterations
        for file in (run / "iterations" / folder).iterdir():
            file.unlink()
        (run / "iterations" / folder).rmdir()
    record = load_input(run)
    assert [p.step for p in record.held_out] == [2]
    assert any("steps [4]" in note for note in record.notes)


def test_a_run_with_no_iteration_draws_nothing(tmp_path, capsys):
    empty = tmp_path / "started"
    (empty / "interfaces").mkdir(parents=True)
    out = tmp_path / "out"
    code, lines, _ = run_cli(capsys, str(empty), "--output_dir", str(out))
    assert code == 0 and lines[-1] == f"report: 0 plots in {out}"
    assert "nothing to plot" in (out / "report.md").read_text()


def _break_metrics(run):
    (run / "iterations" / "step_000002" / "metrics.json").write_text("{not json")


def _drop_metric_field(run):
    path = run / "iterations" / "step_000001" / "metrics.json"
    metrics = json.loads(path.read_text())
    del metrics["rho"]
    path.write_text(json.dumps(metrics))


def _break_parquet(run):
    (run / "iterations" / "step_000001" / "diagnoses.parquet").write_bytes(b"PAR1 truncated")


def _edit_interface(run):
    path = run / "interfaces" / "v1.json"
    path.write_text(path.read_text().replace('"enabled": true', '"enabled": false', 1))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_break_metrics, "metrics.json is not valid JSON"),
        (_drop_metric_field, "field rho"),
        (_break_parquet, "diagnoses.parquet is not a readable"),
        (_edit_interface, "v1.json"),
    ],
)
def test_corrupt_run_files_give_one_line_and_exit_2(tmp_path, capsys, damage, message):
    run = write_run(tmp_path / "run", steps=3)
    damage(run)
    out = tmp_path / "out"
    code, _, err = run_cli(capsys, str(run), "--output_dir", str(out))
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()  # nothing written from bad input


def test_bad_evaluations_and_foreign_directories_give_one_line_and_exit_2(tmp_path, capsys):
    foreign = tmp_path / "photos"
    foreign.mkdir()
    code, _, err = run_cli(capsys, str(foreign), "--output_dir", str(tmp_path / "out"))
    assert code == 2 and "neither a training run" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli(capsys, str(tmp_path / "missing"), "--output_dir", str(tmp_path / "out"))
    assert code == 2 and "not a directory" in err
    evaluation = write_eval(tmp_path / "eval")
    results = json.loads((evaluation / "results.json").read_text())
    del results["scores"]["average"]
    (evaluation / "results.json").write_text(json.dumps(results))
    code, _, err = run_cli(capsys, str(evaluation), "--output_dir", str(tmp_path / "out"))
    assert code == 2 and "field scores.average" in err
    results["scores"]["average"], results["schema"] = 1.0, "someone.else/3"
    (evaluation / "results.json").write_text(json.dumps(results))
    code, _, err = run_cli(capsys, str(evaluation), "--output_dir", str(tmp_path / "out"))
    assert code == 2 and "someone.else/3" in err
    (evaluation / "trajectories.parquet").write_bytes(b"not parquet")
    results["schema"] = "seal_hub.eval/1"
    (evaluation / "results.json").write_text(json.dumps(results))
    code, _, err = run_cli(capsys, str(evaluation), "--output_dir", str(tmp_path / "out"))
    assert code == 2 and "trajectories.parquet" in err
    assert not (tmp_path / "out").exists()


def test_report_on_a_real_tiny_training_run(suite, tmp_path, capsys):
    """Two SEAL steps with the tiny model (half the rollouts replay the ground truth), then the report."""
    from helpers.scripted import half_right
    from helpers.tiny_run import make_trainer

    from seal_hub.models import build_tiny_model

    tiny = build_tiny_model(tmp_path / "tiny")
    make_trainer(suite, tiny, tmp_path, backend=half_right(suite), max_steps=2).train()
    run = tmp_path / "run"
    assert json.loads((run / "run_config.json").read_text())["env_adaptation"] is True
    out = tmp_path / "report"
    code, lines, err = run_cli(capsys, str(run), "--output_dir", str(out))
    assert code == 0, err
    assert lines[-1] == f"report: 4 plots in {out}"
    record = load_input(run)
    assert [it.step for it in record.iterations] == [1, 2] and record.checkpoints == (1, 2)
    assert all(it.success_rate == 0.5 for it in record.iterations)
    # every rollout is counted once in the per-category success read from diagnoses.parquet
    assert sum(total for it in record.iterations for _, total in it.category_success.values()) == sum(
        it.rollouts for it in record.iterations
    )
    text = (out / "report.md").read_text()
    assert "SEAL · tiny" in text and "50.0% → 50.0%" in text


def test_the_held_out_curve_starts_at_the_comparisons_base_and_warm_up(tmp_path, capsys):
    """A run with the comparison's stages (eval/base, eval/warmup) and held-out evaluations at steps 2 and 4: the
    run record carries both stages, and success.png draws the curve from step 0."""
    run = write_run(tmp_path / "seal-7b", steps=4, held_out_every=2)
    write_eval(run / "eval" / "base", passed=(0, 0, 0, 20), per_category=20)
    write_eval(run / "eval" / "warmup", passed=(8, 6, 2, 18), per_category=20)
    record = load_input(run)
    assert [(s.name, s.num_tasks) for s in record.stages] == [("base", 80), ("warmup", 80)]
    assert record.stages[1].average == pytest.approx((40 + 30 + 10 + 90) / 4 / 100)
    assert [p.step for p in record.held_out] == [2, 4]
    out = tmp_path / "out"
    code, lines, err = run_cli(capsys, str(run), "--output_dir", str(out))
    assert code == 0, err
    with Image.open(out / "success.png") as image:
        assert image.width >= 800
    (run / "eval" / "warmup" / "results.json").write_text('{"scores": {}}')
    with pytest.raises(ReportInputError, match="no scores.average"):
        load_input(run)
