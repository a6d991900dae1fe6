"""The training script in trl/scripts/grpo.py's shape: its arguments (five records parsed together, every flag and
YAML key of before), the demo's task choice left out under a user environment without rewriting what was parsed,
the tasks chosen once (`seal_hub.training.selection`) and the summary it prints (`seal_hub.training.summary`), line
for line."""

from __future__ import annotations

import ast
import json
from dataclasses import fields
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers.user_env import PANTRY, PANTRY_ROWS, write_jsonl

from seal_hub.scripts import seal
from seal_hub.training import SealConfig
from seal_hub.training.selection import TaskArguments, TooFewTasksError, environment_run_name, select_tasks

# the 23 fields of the one SealScriptArguments before issue 38: each is still a flag and YAML key of the script
SCRIPT_FIELDS_BEFORE = [
    "suite",
    "environment",
    "dataset",
    "dataset_revision",
    "reward_funcs",
    "eval_fraction",
    "call_timeout_s",
    "split_file",
    "split_seed",
    "num_train_tasks",
    "categories",
    "held_out_comparison",
    "publish_run",
    "publish_backend",
    "publish_private",
    "sft_warmup_steps",
    "sft_learning_rate",
    "sft_batch_size",
    "sft_frozen_context",
    "sft_warmup_dir",
    "interface",
    "init_adapter",
    "task_order",
]


def test_the_script_has_grpo_py_shape_main_near_the_top_right_under_its_arguments():
    source = Path(seal.__file__).read_text(encoding="utf-8")
    assert len(source.splitlines()) <= 250
    tree = ast.parse(source)
    top = [node for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)]
    names = [node.name for node in top]
    assert names[:2] == ["SealScriptArguments", "main"]  # the arguments, then main, before any helper
    main = top[1]
    assert main.lineno <= 120 and main.end_lineno - main.lineno <= 60


def test_every_flag_of_before_is_still_a_field_of_the_parser_and_none_is_declared_twice():
    names = [f.name for cls in seal.make_parser().dataclass_types for f in fields(cls)]
    assert len(names) == len(set(names))
    assert set(SCRIPT_FIELDS_BEFORE) <= set(names)
    assert {f.name for f in fields(seal.SealScriptArguments)} == {
        "held_out_comparison",
        "publish_run",
        "publish_backend",
        "publish_private",
        "interface",
        "init_adapter",
    }


def test_the_demo_config_under_a_user_environment_leaves_its_task_choice_out_unless_flagged(tmp_path):
    out = ["--output_dir", str(tmp_path)]
    demo = seal.parse_args(out)
    assert demo[3].categories and demo[3].num_train_tasks == 200 and demo[4].sft_warmup_steps == 7
    user = ["--environment", PANTRY, "--dataset", "pantry.jsonl"]
    script, training, _, tasks, warmup = seal.parse_args([*out, *user])
    assert (tasks.categories, tasks.num_train_tasks) == (None, None)  # the dataclass defaults, as parsed
    assert warmup.sft_warmup_steps == 7 and training.max_steps == 3 and script.held_out_comparison  # the demo's
    flagged = seal.parse_args([*out, *user, "--num_train_tasks", "3", "--categories", "stock"])
    assert (flagged[3].categories, flagged[3].num_train_tasks) == (["stock"], 3)
    assert demo[0].publish_run == "demo/seal-demo-cpu" and script.publish_run == "demo/seal-pantry"  # not the demo's
    named = seal.parse_args([*user, "--publish_run", "me/mine"])
    assert (named[0].publish_run, named[1].output_dir) == ("me/mine", "outputs/seal-pantry")
    assert environment_run_name("pkg.mod:Smart_Home2") == "seal-smart-home2" == environment_run_name("Smart_Home2")
    config = tmp_path / "mine.yaml"  # a config of one's own keeps every key it gives
    config.write_text(f"environment: {PANTRY}\ndataset: pantry.jsonl\nnum_train_tasks: 2\noutput_dir: {tmp_path}\n")
    assert seal.parse_args(["--config", str(config)])[3].num_train_tasks == 2


def test_run_reports_a_refused_config_in_one_line(capsys):
    assert seal.run(["--publish_private", "true", "--publish_run", ""], prog="seal-hub train") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("seal-hub train: error: publish_private is set but publish_run is not") and "\n" not in err


@pytest.fixture
def pantry_args(tmp_path):
    data = write_jsonl(tmp_path / "pantry.jsonl", PANTRY_ROWS)
    return TaskArguments(environment=PANTRY, dataset=str(data), eval_fraction=0.4)


def small_config(tmp_path, **changes) -> SealConfig:
    settings = {"per_device_train_batch_size": 2, "num_generations": 2, "eval_tasks": 2, "report_to": []}
    return SealConfig(output_dir=str(tmp_path / "out"), use_cpu=True, **(settings | changes))


def test_the_tasks_are_chosen_once_and_the_held_out_ones_only_when_asked(pantry_args, tmp_path, monkeypatch):
    import seal_hub.training.selection as selection

    calls = []
    original = selection.held_out_tasks
    monkeypatch.setattr(selection, "held_out_tasks", lambda *a, **k: calls.append(a) or original(*a, **k))
    config = small_config(tmp_path)
    chosen = select_tasks(pantry_args, config, held_out=True)
    assert len(calls) == 1  # once, for both the periodic evaluation and the comparison
    train, held = {t.id for t in chosen.train}, {t.id for t in chosen.held_out}
    assert train == set(chosen.split.train) and held <= set(chosen.split.test) and len(held) == 2
    assert not train & held and chosen.split.source == "default" and chosen.suite.name == PANTRY
    assert select_tasks(pantry_args, config).held_out == () and len(calls) == 1


def test_a_selection_that_cannot_train_is_refused_before_any_model_loads(pantry_args, tmp_path):
    few = TaskArguments(**{**vars(pantry_args), "num_train_tasks": 1})
    with pytest.raises(TooFewTasksError, match=r"1 training task\(s\), but one generation batch takes 2 distinct"):
        select_tasks(few, small_config(tmp_path, per_device_train_batch_size=4))
    with pytest.raises(ValueError, match="reference_calls column"):  # no answer key in the pantry's rows
        select_tasks(pantry_args, small_config(tmp_path), warmup=True)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"reward_funcs": ["m:f"]}, "reward_funcs needs environment"),
        ({"dataset": "tasks.jsonl"}, "dataset needs environment"),
    ],
)
def test_task_arguments_refuse_what_needs_an_environment(changes, message):
    with pytest.raises(ValueError, match=message):
        TaskArguments(**changes)


def test_reward_funcs_are_split_on_commas_once():
    args = TaskArguments(environment=PANTRY, dataset="d.jsonl", reward_funcs=["a:f,b:g", "c:h"])
    assert args.reward_funcs == ["a:f", "b:g", "c:h"]


def fake_trainer(out: Path, published: bool, completed_at: int | None = None):
    repos = SimpleNamespace(trajectories="ns/r-trajectories", environment="ns/r-env", adapter="ns/r-adapter")
    return SimpleNamespace(
        args=SimpleNamespace(output_dir=str(out), max_steps=3, num_train_epochs=1.0),
        completed_at=completed_at,
        store=SimpleNamespace(versions=lambda: ["v0", "v1"]),
        interface=SimpleNamespace(version="v1"),
        window=SimpleNamespace(rho={"spurious_tool_call": 2.0, "pass": 1.0, "missing_tool_call": 1.51}),
        publish=SimpleNamespace(repos=repos) if published else None,
    )


def test_the_summary_prints_the_same_lines_as_before(tmp_path):
    from seal_hub.training.summary import run_summary

    folder = tmp_path / "iterations" / "step_000001"
    folder.mkdir(parents=True)
    labels = {"pass": {"prevalence": 0.5}, "missing_tool_call": {"prevalence": 0.25}, "spurious_tool_call": {}}
    labels["spurious_tool_call"]["prevalence"] = 0.125
    labels["state_mismatch"] = {"prevalence": 0.0625}
    metrics = {"success_rate": 0.375, "mean_weight": 1.0625, "interface_version": "v1"}
    (folder / "metrics.json").write_text(json.dumps(metrics | {"label_profile": {"labels": labels}}))
    expected = [
        "",
        "SEAL run summary",
        " step  success  mean w interface  top labels",
        "    1    37.5%   1.062        v1  pass 0.50, missing_tool_call 0.25, spurious_tool_call 0.12",
        "environment versions: v0, v1 (now v1)",
        "rho: spurious_tool_call=2.000, missing_tool_call=1.510",
        f"artifacts: {tmp_path.resolve()} (iterations/, interfaces/, checkpoint-*/, adapter)",
    ]
    assert run_summary(fake_trainer(tmp_path, published=False)).split("\n") == expected
    published = run_summary(fake_trainer(tmp_path, published=True)).split("\n")
    last = "published: ns/r-trajectories, ns/r-env, ns/r-adapter (`seal-hub hub list` shows their versions)"
    assert published == [*expected, last]


def test_a_complete_run_says_so_in_one_line(tmp_path):
    from seal_hub.training.summary import run_summary

    line = run_summary(fake_trainer(tmp_path, published=True, completed_at=3))
    assert line == (
        f"SEAL run {tmp_path} is already complete at step 3 (max_steps 3): nothing to train; to extend it, "
        "relaunch with a larger --max_steps (e.g. --max_steps 6)"
    )
