"""The smart home example (examples/smart_home), as a new user runs it: its answer key passes its own reward on
every row, its tasks are what make_tasks.py writes, and its config trains (the tiny model, one warm-up step and
one GRPO step, from the repository's root as the README says), publishes the three artifacts, and the replay
Space shows its episodes."""

from __future__ import annotations

import importlib.util
import json

import pytest
import yaml
from helpers.paths import ROOT, SMART_HOME

from seal_hub.envs.builtin import resolve_suite

ENVIRONMENT = "examples.smart_home.smart_home:SmartHome"
RUN = "test/smart-home"


@pytest.fixture
def at_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # the README's command runs from the repository's root, which makes `examples` importable
    monkeypatch.syspath_prepend(str(ROOT))


@pytest.fixture
def home(at_root):
    return resolve_suite(environment=ENVIRONMENT, dataset=str(SMART_HOME / "tasks.jsonl"))


def _rows() -> list[str]:
    return (SMART_HOME / "tasks.jsonl").read_text().splitlines()


def test_the_shipped_tasks_are_what_make_tasks_writes():
    spec = importlib.util.spec_from_file_location("make_tasks", SMART_HOME / "make_tasks.py")
    make_tasks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_tasks)
    shipped = [json.loads(line) for line in _rows()]
    assert shipped == make_tasks.tasks()


def test_every_rows_answer_key_passes_the_environments_own_reward_and_the_config_holds_out_every_category(home):
    from seal_hub.training.warmup import warmup_conversations

    assert len(home.tasks) == 615
    assert home.categories == ("light", "temperature", "both", "relative", "no_change")
    assert len(warmup_conversations(home, list(home.tasks.values()))) == 615  # each kept only if get_reward passes
    config = yaml.safe_load((SMART_HOME / "config.yaml").read_text())
    assert (config["environment"], config["dataset"]) == (ENVIRONMENT, "examples/smart_home/tasks.jsonl")
    test, dev, train = (home.split_ids(name) for name in ("test", "dev", "train"))
    assert (len(test), len(dev), len(train)) == (300, 75, 240)
    assert not (set(test) | set(dev)) & set(train) and not set(test) & set(dev)
    for split in (test, dev):
        assert {home.task(t).category for t in split} == set(home.categories)
    assert config["eval_tasks"] <= len(test)
    seen = {home.task(t).messages for t in (*train, *dev)}
    assert not any(home.task(t).messages in seen for t in test)  # no held-out request is worded as a trained one
    asked = [(home.task(t).messages, json.dumps(home.task(t).row["start"])) for t in test]
    assert len(set(asked)) == len(asked)  # no test request twice (greedy decoding would count one outcome twice)


def test_the_example_config_trains_the_tiny_model_and_publishes_the_three_artifacts(at_root, tmp_path, monkeypatch):
    from seal_hub.cli import main as cli_main
    from seal_hub.models import build_tiny_model

    tiny = build_tiny_model(tmp_path / "tiny")
    registry, out = tmp_path / "registry", tmp_path / "run"
    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(registry))
    flags = ["--config", str(SMART_HOME / "config.yaml"), "--model_name_or_path", str(tiny)]
    flags += ["--output_dir", str(out), "--publish_run", RUN, "--max_steps", "1", "--sft_warmup_steps", "1"]
    flags += ["--sft_batch_size", "2", "--per_device_train_batch_size", "2", "--num_generations", "2"]
    flags += ["--max_new_tokens", "8", "--held_out_comparison", "false", "--disable_tqdm", "true"]
    assert cli_main(["train", *flags]) == 0
    assert (out / "iterations" / "step_000001" / "trajectories.parquet").is_file()
    for kind, repo in (("datasets", "trajectories"), ("datasets", "env"), ("models", "adapter")):
        assert (registry / kind / f"{RUN}-{repo}.git").is_dir()
    snapshot = json.loads((out / "interfaces" / "v1.json").read_text())
    assert snapshot["parent"] == "v0" and snapshot["user_environment"]["class_path"] == ENVIRONMENT

    from seal_hub.replay.page import Selection, Viewer

    viewer = Viewer()  # the replay Space on the published run: its episodes, with the tools the version recorded
    browse = viewer.browse(Selection(run=f"local://{RUN}"))
    assert browse.episodes >= 2 and browse.selection.task in {t["id"] for t in map(json.loads, _rows())}
    replay = viewer.replay(browse.selection)
    assert "set_light" in replay.tools_json and viewer.loaded_suites == ()  # the class was not imported for it


def test_a_request_that_asks_for_nothing_passes_only_without_a_call(home):
    from seal_hub.envs.protocol import Action, ToolCall

    task = next(t for t in home.tasks.values() if t.category == "no_change")

    def reward(*actions: Action) -> float:
        episode = home.episode(task)
        episode.reset()
        for action in actions:
            if not episode.done:
                episode.step(action)
        episode.close()
        return episode.verdict.reward

    read = Action(tool_calls=(ToolCall("get_status", {"room": "kitchen"}),))
    assert reward(Action(content="You're welcome!")) == 1.0
    assert reward(read, Action(content="All is well.")) == 0.0  # the home is unchanged, but it was not asked
