"""An environment served the way OpenEnv serves them: the tally of `examples/openenv_tally` (OpenEnv's server
classes) runs as a real server on 127.0.0.1 (a subprocess at a free port, up once `/health` answers, stopped by its
pid), and the TRL-form class that wraps OpenEnv's client trains and evaluates as any user environment: its answer
key passes the server's reward through `seal-hub eval --model oracle`, episodes step through the UserSuite path, the
tiny model trains 2 steps with `seal-hub train --environment ... --dataset ...` (turn labels, interface versions),
and a server killed mid-run leaves every rollout recorded and labelled where its episode ran."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from helpers.paths import ROOT

pytest.importorskip("openenv", reason='the OpenEnv tests need openenv, in the test extra: pip install ".[test]"')

ENVIRONMENT = "examples.openenv_tally.tally:Tally"
KILLING = "helpers.openenv_tally:KillingTally"
TASKS = ROOT / "examples" / "openenv_tally" / "tasks.jsonl"
RUN = "test/openenv-tally"


@pytest.fixture
def tally(tmp_path, monkeypatch):
    """The tally server, running; `TALLY_URL` points the class at it; `examples` importable, as from the root."""
    monkeypatch.chdir(ROOT)
    monkeypatch.syspath_prepend(str(ROOT))
    from helpers.openenv_tally import start_server, stop_server

    server, url = start_server(tmp_path / "server.log")
    monkeypatch.setenv("TALLY_URL", url)
    yield SimpleNamespace(server=server, url=url, stop=stop_server)
    stop_server(server)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from seal_hub.models import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny"))


def _rows() -> dict[str, dict]:
    return {row["id"]: row for row in map(json.loads, TASKS.read_text().splitlines())}


def test_the_served_tally_steps_through_the_user_suite_and_its_answer_key_passes_the_servers_reward(
    tally, tmp_path, capsys
):
    from seal_hub.cli import main as cli_main
    from seal_hub.envs.builtin import resolve_suite
    from seal_hub.envs.protocol import Action, ToolCall

    suite = resolve_suite(environment=ENVIRONMENT, dataset=str(TASKS))
    assert tuple(suite.tools) == ("add", "read") and len(suite.tasks) == 32
    episode = suite.episode("read_first-0")  # starts at 1, the target is 12
    episode.reset()
    said = [episode.step(Action(tool_calls=(ToolCall("read", {}),))).observation.tool_results[0].content]
    said.append(
        episode.step(Action(tool_calls=(ToolCall("add", {"amount": 11}),))).observation.tool_results[0].content
    )
    ended = episode.step(Action(content="Done."))
    episode.close()
    assert said == ["the tally is 1", "added 11; the tally is 12"] and ended.done and episode.verdict.reward == 1.0
    wrong = suite.episode("up-0")  # 0 -> 3; adding 2 leaves it at 2: the server's reward is 0
    wrong.reset()
    wrong.step(Action(tool_calls=(ToolCall("add", {"amount": 2}),)))
    wrong.step(Action(content="Done."))
    wrong.close()
    assert wrong.verdict.reward == 0.0 and not wrong.verdict.passed

    out = tmp_path / "oracle"
    flags = ["--model", "oracle", "--environment", ENVIRONMENT, "--dataset", str(TASKS), "--split", "all"]
    assert cli_main(["eval", *flags, "--output_dir", str(out), "--no_progress"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["num_tasks"] == 32 and capsys.readouterr().out.strip().splitlines()[-1].startswith(
        f"eval {ENVIRONMENT}: avg 100.00 on 32 tasks"
    )


def test_seal_hub_train_on_the_served_tally_writes_turn_labels_and_interface_versions(
    tally, tiny_dir, tmp_path, monkeypatch, capsys
):
    import pyarrow.parquet as pq

    from seal_hub.cli import main as cli_main
    from seal_hub.diagnosis import Label
    from seal_hub.rollout.records import read_trajectories

    registry, out = tmp_path / "registry", tmp_path / "run"
    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(registry))
    flags = ["--environment", ENVIRONMENT, "--dataset", str(TASKS), "--model_name_or_path", str(tiny_dir)]
    flags += ["--output_dir", str(out), "--max_steps", "2", "--per_device_train_batch_size", "2"]
    flags += ["--num_generations", "2", "--max_new_tokens", "8", "--publish_run", RUN, "--publish_backend", "local"]
    flags += ["--interface_mode", "full", "--sft_warmup_steps", "0", "--held_out_comparison", "false"]
    flags += ["--max_steps_per_turn", "2", "--disable_tqdm", "true"]
    assert cli_main(["train", *flags]) == 0
    assert "SEAL run summary" in capsys.readouterr().out
    rows = _rows()
    for step in (1, 2):
        folder = out / "iterations" / f"step_{step:06d}"
        trajectories = read_trajectories(folder / "trajectories.parquet")
        assert len(trajectories) == 2 and all(rows[t.task_id]["split"] == "train" for t in trajectories)
        for trajectory in trajectories:  # the reward is the server's: the class computes none of its own
            executed = [r for turn in trajectory.turns for s in turn.steps for r in s.results if r.executed]
            row = rows[trajectory.task_id]
            if not executed:
                assert trajectory.reward == float(row["start"] == row["target"])
        labels = pq.read_table(folder / "diagnoses.parquet").column("labels").to_pylist()
        assert all(len(row) == 1 and row[0] in {str(label) for label in Label} for row in labels)
    snapshots = [json.loads(p.read_text()) for p in sorted((out / "interfaces").glob("v*.json"))]
    assert len(snapshots) >= 2 and snapshots[-1]["parent"] is not None
    assert all(s["user_environment"]["class_path"] == ENVIRONMENT for s in snapshots)
    for kind, repo in (("datasets", "trajectories"), ("datasets", "env"), ("models", "adapter")):
        assert (registry / kind / f"{RUN}-{repo}.git").is_dir()


def test_a_server_killed_mid_run_leaves_every_rollout_recorded_and_labelled_where_its_episode_ran(
    tally, tiny_dir, capsys
):
    from helpers import openenv_tally
    from helpers.scripted import ScriptedBackend
    from transformers import AutoTokenizer

    from seal_hub.envs.builtin import resolve_suite
    from seal_hub.envs.protocol import ErrorKind
    from seal_hub.envs.user.episode import RESET_FAILED
    from seal_hub.generation import SamplingConfig
    from seal_hub.models.toolcalls import format_tool_calls
    from seal_hub.rollout import RolloutConfig, RolloutEngine

    suite = resolve_suite(environment=KILLING, dataset=str(TASKS))
    tasks = suite.select(suite.split_ids("all"))
    tokenizer = AutoTokenizer.from_pretrained(tiny_dir)

    def script(session, step, request):  # every rollout plays its row's answer key, then answers
        actions = suite.oracle_steps(suite.task(session.split("#")[0]))[0]
        texts = [format_tool_calls(action.tool_calls, "hermes") for action in actions] + ["Done."]
        return texts[min(step, len(texts) - 1)]

    openenv_tally.arm(3, lambda: tally.stop(tally.server, hard=True))  # SIGKILL before the third add is sent
    config = RolloutConfig(max_live_episodes=8, sampling=SamplingConfig(temperature=0.0, max_new_tokens=128))
    trajectories = RolloutEngine(ScriptedBackend(tokenizer, script), tokenizer, suite, config).run(tasks)

    assert tally.server.poll() is not None  # the server is gone, and the run finished
    assert sorted(t.task_id for t in trajectories) == sorted(t.id for t in tasks)  # nothing lost
    passed = [t for t in trajectories if t.reward == 1.0]
    refused = [
        t
        for t in trajectories
        if any(
            str(r.error_kind) == str(ErrorKind.TOOL_EXCEPTION)
            for turn in t.turns
            for s in turn.steps
            for r in s.results
        )
    ]
    unreset = [
        t for t in trajectories if t.turns and t.turns[0].verdict and t.turns[0].verdict.error_type == RESET_FAILED
    ]
    # the first 8 rows are live together: 2 adds ran, the third killed the server; the other 24 started after it
    assert (len(passed), len(refused), len(unreset)) == (2, 6, 24)
    for trajectory in trajectories:
        (label,) = suite.diagnose(trajectory, suite.task(trajectory.task_id)).labels
        if trajectory in unreset:
            assert label is None and trajectory.reward == 0.0  # the environment's fault: unscored, unlabelled
        else:
            assert label is not None
        if trajectory in refused:
            assert str(label) == "recovery_failure" and trajectory.reward == 0.0
    warned = capsys.readouterr()
    assert "reset raised" in warned.out + warned.err


def test_training_goes_on_when_the_server_dies_between_steps_and_keeps_every_rollout(
    tally, tiny_dir, tmp_path, monkeypatch, capsys
):
    import pyarrow.parquet as pq
    from helpers import openenv_tally

    from seal_hub.cli import main as cli_main
    from seal_hub.rollout.records import read_trajectories

    openenv_tally.arm(3, lambda: tally.stop(tally.server, hard=True), method="reset")  # step 2's first episode
    out = tmp_path / "run"
    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(tmp_path / "registry"))
    flags = [
        "--publish_run",
        f"{RUN}-killed",
        "--environment",
        KILLING,
        "--dataset",
        str(TASKS),
        "--model_name_or_path",
        str(tiny_dir),
    ]
    flags += ["--output_dir", str(out), "--max_steps", "2", "--per_device_train_batch_size", "2"]
    flags += ["--num_generations", "2", "--max_new_tokens", "8", "--sft_warmup_steps", "0"]
    flags += ["--held_out_comparison", "false", "--max_steps_per_turn", "2", "--disable_tqdm", "true"]
    assert cli_main(["train", *flags]) == 0
    printed = capsys.readouterr()
    assert tally.server.poll() is not None and "SEAL run summary" in printed.out
    assert "reset raised" in printed.out + printed.err  # one line naming the class and the row
    labels = {}
    for step in (1, 2):
        folder = out / "iterations" / f"step_{step:06d}"
        assert len(read_trajectories(folder / "trajectories.parquet")) == 2  # every rollout recorded
        labels[step] = pq.read_table(folder / "diagnoses.parquet").column("labels").to_pylist()
    assert all(row[0] is not None for row in labels[1])  # before: labelled
    assert labels[2] == [[None], [None]]  # after: the environment's fault, unscored and unlabelled
