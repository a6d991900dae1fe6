"""A user's own environment in TRL's `environment_factory` form, as a suite: its tools and schemas (as TRL finds
them), its dataset's tasks and held-out split, its episodes (one instance each), its turn labels, the interface
that evolves on it, the version that records it, every way a bad environment misbehaves (a labelled observation or
one line naming the class and the row, never a crashed run), and `seal-hub train --environment ... --dataset ...`
end to end: the three artifacts published, then `seal-hub eval` on the published adapter."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from types import SimpleNamespace

import pytest
from helpers import user_env
from helpers.user_env import PANTRY, PANTRY_ROWS, write_jsonl

from seal_hub.diagnosis import Label
from seal_hub.envs.builtin import resolve_suite
from seal_hub.envs.protocol import Action, ErrorKind, ParseError, ToolCall
from seal_hub.envs.suite import Suite, SuiteError
from seal_hub.envs.user.episode import RESET_FAILED, REWARD_INVALID
from seal_hub.envs.user.labels import diagnose
from seal_hub.envs.user.load import EnvironmentError as UserEnvironmentError
from seal_hub.envs.user.schema import tool_names
from seal_hub.rollout.records import StepRecord, TurnRecord, VerdictRecord

RUN = "test/user-env-run"


@pytest.fixture
def pantry_data(tmp_path):
    return write_jsonl(tmp_path / "pantry.jsonl", PANTRY_ROWS)


@pytest.fixture
def pantry(pantry_data):
    return resolve_suite(environment=PANTRY, dataset=str(pantry_data))


def bad_suite(tmp_path, name: str, rows: list[dict] | None = None, **limits):
    data = write_jsonl(tmp_path / f"{name}.jsonl", rows or [{"id": "only", "prompt": "Go."}])
    return resolve_suite(environment=f"helpers.user_env:{name}", dataset=str(data), **limits)


def play(suite, task_id: str, *actions: Action):
    """Reset `task_id`'s episode and step `actions` until it ends; (episode, step results, a trajectory-like)."""
    episode = suite.episode(task_id)
    episode.reset()
    results = []
    steps = []
    for action in actions:
        if episode.done:
            break
        result = episode.step(action)
        results.append(result)
        steps.append(StepRecord.of(action, result.observation.tool_results))
    episode.close()
    verdict = episode.verdict
    turn = TurnRecord(index=0, steps=steps, verdict=VerdictRecord.of(verdict.turns[0]) if verdict.turns else None)
    return episode, results, SimpleNamespace(task_id=task_id, reward=verdict.reward, turns=[turn])


def call(tool: str, **arguments) -> Action:
    return Action(tool_calls=(ToolCall(tool, arguments),))


ANSWER = Action(content="Done.")


# ----- the class as a suite -----


def test_a_trl_form_class_is_a_trainable_suite_whose_tools_are_the_ones_trl_would_offer(pantry):
    assert isinstance(pantry, Suite) and pantry.not_trainable is None and pantry.turn_labels and pantry.tool_errors
    trl_names = [
        name
        for name, _ in inspect.getmembers(user_env.Pantry, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]
    assert tool_names(user_env.Pantry) == trl_names == ["add_item", "take_item", "weigh"]
    add, take, weigh = (tool["function"] for tool in pantry.tool_schemas)
    assert add["parameters"]["required"] == ["name"] and add["description"] == "Put items in the pantry."
    assert add["parameters"]["properties"]["count"]["default"] == 1  # signature defaults, for the schema cues
    assert add["parameters"]["properties"]["shelf"] == {
        "type": "string",
        "enum": ["top", "bottom"],
        "description": "where they go",
        "default": "top",
    }
    assert weigh["parameters"]["properties"]["unit"]["enum"] == ["g", "kg"]  # Literal values
    assert pantry.warmup_script(pantry.task("stock-1")) is None  # no reference_calls column: nothing to teach
    assert pantry.warmup_script(pantry.task("chat")) is None  # not even the abstention, without any key
    with pytest.raises(SuiteError, match="no reference_calls column"):
        pantry.oracle_steps(pantry.task("stock-1"))


# ----- the answer key (reference_calls) -----


def keyed_rows() -> list[dict]:
    stock = {"name": "add_item", "arguments": {"name": "apple", "count": 2}}
    return [
        {"id": "flat", "prompt": "Two apples.", "target": {"apple": 2}, "reference_calls": [stock]},
        {
            "id": "steps",
            "prompt": "Two apples, then weigh.",
            "target": {"apple": 2},
            "reference_calls": [[stock], [{"name": "weigh", "arguments": '{"unit": "g"}'}]],  # OpenAI's JSON string
        },
        {"id": "wrong", "prompt": "Two apples.", "target": {"apple": 3}, "reference_calls": [stock]},
        {"id": "none", "prompt": "Two apples.", "target": {"apple": 2}},
        {"id": "chat", "prompt": "Hello!", "expects_call": False},
    ]


def test_reference_calls_give_the_oracle_and_a_warm_up_kept_only_where_the_reward_passes(tmp_path):
    from seal_hub.envs.reference import ABSTAIN, CLOSING
    from seal_hub.interface import InterfaceSnapshot
    from seal_hub.training.warmup import warmup_conversation, warmup_conversations

    suite = resolve_suite(environment=PANTRY, dataset=str(write_jsonl(tmp_path / "keyed.jsonl", keyed_rows())))
    flat, steps = suite.task("flat"), suite.task("steps")
    assert flat.reference == ((ToolCall("add_item", {"name": "apple", "count": 2}),),)
    assert [len(step) for step in steps.reference] == [1, 1] and steps.reference[1][0].arguments == {"unit": "g"}
    assert suite.oracle_steps(steps) == [[Action(tool_calls=s) for s in steps.reference]]
    assert suite.oracle_steps(suite.task("chat")) == [[]]
    script = suite.warmup_script(steps)
    assert [r.tool_calls for r in script.replies[:-1]] == list(steps.reference)
    assert script.replies[-1].content == CLOSING and script.must_pass
    assert suite.warmup_script(suite.task("chat")).replies == (Action(content=ABSTAIN),)
    assert suite.warmup_script(suite.task("none")) is None
    interface = InterfaceSnapshot.null(suite.name)
    assert warmup_conversation(suite, suite.task("wrong"), interface) is None  # a key get_reward fails teaches nothing
    taught = warmup_conversations(suite, list(suite.tasks.values()))
    assert len(taught) == 3  # flat, steps, chat
    roles = [m["role"] for m in taught[1]["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert taught[1]["messages"][-2]["content"] == "200.0"  # the tool really ran: 2 apples of 100 g


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ({"name": "add_item"}, "a list of steps"),
        ([[]], "each step must be a non-empty list of calls"),
        ([{"arguments": {}}], "needs a 'name' string"),
        ([{"name": "add_item", "arguments": [1]}], "arguments of call 'add_item' must be a JSON object"),
        ([{"name": "eat_item", "arguments": {}}], "tool 'eat_item' is not a tool of Pantry"),
    ],
)
def test_a_malformed_answer_key_is_one_line_naming_the_dataset_row_and_column(tmp_path, key, message):
    rows = [{"id": "a", "prompt": "Go."}, {"id": "b", "prompt": "Go.", "reference_calls": key}]
    with pytest.raises(UserEnvironmentError, match=message) as raised:
        resolve_suite(environment=PANTRY, dataset=str(write_jsonl(tmp_path / "bad.jsonl", rows)))
    assert "row 1" in str(raised.value) and "reference_calls" in str(raised.value)


def test_tasks_come_from_the_rows_and_the_held_out_split_is_seeded_and_never_trained_on(pantry, tmp_path):
    task = pantry.task("take-2")
    assert task.category == "take" and [m.role for m in task.messages] == ["system", "user"]
    assert pantry.categories == ("stock", "take", "chat") and not pantry.task("chat").expects_call
    train, test = pantry.split_ids("train"), pantry.split_ids("test")
    assert set(train).isdisjoint(test) and sorted(train + test) == sorted(pantry.tasks)
    assert {pantry.task(t).category for t in test} == {"stock", "take"}  # a category of one is never held out
    assert pantry.split_ids("train") == train and pantry.split_ids("train", seed=1) != train
    assert pantry.split_ids("take") == ("take-1", "take-2", "take-3", "take-4")
    # ids from the row index without an `id` column; the split named by a `split` column
    rows = [{"prompt": f"q{i}", "split": "test" if i == 2 else "train"} for i in range(4)]
    named = resolve_suite(environment=PANTRY, dataset=str(write_jsonl(tmp_path / "named.jsonl", rows)))
    assert named.split_ids("test") == ("2",) and named.split_ids("train") == ("0", "1", "3")
    assert named.default_split == "named" and named.categories == ("default",)


def test_a_saved_dataset_with_train_and_test_splits_names_the_held_out_split(tmp_path):
    import datasets

    rows = {"prompt": ["a", "b", "c"], "id": ["x", "y", "z"]}
    datasets.DatasetDict(
        {"train": datasets.Dataset.from_dict(rows), "test": datasets.Dataset.from_dict({"prompt": ["d"], "id": ["w"]})}
    ).save_to_disk(str(tmp_path / "saved"))
    suite = resolve_suite(environment=PANTRY, dataset=str(tmp_path / "saved"))
    assert suite.split_ids("train") == ("x", "y", "z") and suite.split_ids("test") == ("w",)


def test_an_episode_resets_from_its_row_calls_tools_until_an_answer_and_scores_with_get_reward(pantry):
    episode = pantry.episode("take-2")
    first = episode.reset()
    assert first.messages[-1].content == 'Take one pear. (pantry now: {"pear": 2})'  # reset's text appended
    assert first.tools == pantry.tool_schemas
    taken = episode.step(call("take_item", name="pear"))
    assert not taken.done and taken.observation.tool_results[0].content == '{"name": "pear", "left": 1}'
    end = episode.step(ANSWER)
    assert end.done and end.reward == 1.0 and episode.verdict.passed


def test_the_step_limit_ends_an_episode_and_it_is_still_scored(pantry):
    from seal_hub.envs.episode import EpisodeSettings

    episode = pantry.episode("stock-1", EpisodeSettings(max_steps_per_turn=2))
    episode.reset()
    assert not episode.step(call("add_item", name="apple")).done
    last = episode.step(call("weigh", unit="g"))
    assert last.done and last.truncated and last.reward == 1.0


# ----- labels -----


@pytest.mark.parametrize(
    ("task_id", "actions", "label"),
    [
        ("stock-2", [call("add_item", name="apple", count=2), ANSWER], Label.PASS),
        ("stock-2", [Action(parse_errors=(ParseError("json", "bad"),)), ANSWER], Label.INVALID_TOOL_CALL),
        ("stock-2", [call("buy", name="apple"), ANSWER], Label.INVALID_TOOL_CALL),
        ("stock-2", [call("add_item", item="apple"), ANSWER], Label.INVALID_TOOL_CALL),
        ("stock-2", [call("weigh"), ANSWER], Label.INVALID_TOOL_CALL),
        ("stock-2", [call("take_item", name="pear"), ANSWER], Label.RECOVERY_FAILURE),
        ("stock-2", [ANSWER], Label.MISSING_TOOL_CALL),
        ("stock-2", [call("add_item", name="apple"), ANSWER], Label.ARGUMENT_MISMATCH),
        ("chat", [call("weigh", unit="g"), ANSWER], Label.SPURIOUS_TOOL_CALL),
        ("chat", [ANSWER], Label.CORRECT_ABSTENTION),
    ],
)
def test_turn_labels_come_from_what_the_protocol_sees(pantry, task_id, actions, label):
    _, _, trajectory = play(pantry, task_id, *actions)
    assert diagnose(trajectory, pantry.task(task_id)).labels == (label,)


# ----- bad environments -----


def test_a_tool_that_raises_is_an_observation_by_exception_class(tmp_path):
    suite = bad_suite(tmp_path, "Raises")
    _, [result, _], trajectory = play(suite, "only", call("explode"), ANSWER)
    [observed] = result.observation.tool_results
    assert observed.error_kind is ErrorKind.TOOL_EXCEPTION and observed.content == "Error: ValueError: the tool broke"
    assert suite.raised([trajectory]) == {"ValueError": ""}


def test_a_tool_that_hangs_is_cut_at_the_time_limit_and_ends_its_episode(tmp_path, capsys):
    suite = bad_suite(tmp_path, "Hangs", call_timeout_s=0.3)
    _, [result], trajectory = play(suite, "only", call("wait", seconds=5), ANSWER)
    assert result.done and result.reward == 0.0
    assert result.observation.tool_results[0].content == "Error: TimeoutError: wait did not return within 0.3 s"
    assert diagnose(trajectory, suite.task("only")).labels == (Label.RECOVERY_FAILURE,)
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "environment class Hangs, row 0 (task only)" in line and "time limit" in line
    _, [fast, _], _ = play(suite, "only", call("wait", seconds=0.01), ANSWER)  # the next episode runs normally
    assert fast.observation.tool_results[0].content == "woke up"


def test_results_that_are_not_text_are_converted_and_huge_ones_cut(tmp_path):
    suite = bad_suite(tmp_path, "NotText")
    actions = Action(tool_calls=(ToolCall("numbers", {}), ToolCall("thing", {}), ToolCall("huge", {})))
    _, [result, _], _ = play(suite, "only", actions, ANSWER)
    numbers, thing, huge = (r.content for r in result.observation.tool_results)
    assert numbers == '{"a": [1, 2.5, null]}' and thing.startswith("<object object at")
    assert len(huge) == 8000 and huge.endswith("[truncated: 8000 of 500000 characters shown]")


def test_what_a_tool_prints_does_not_reach_the_commands_output(tmp_path, capsys):
    suite = bad_suite(tmp_path, "Prints")
    print("before")
    _, [result, _], _ = play(suite, "only", call("chatty"), ANSWER)
    print("after")
    assert result.observation.tool_results[0].content == "quiet result"
    assert capsys.readouterr().out == "before\nafter\n"


def test_episodes_have_their_own_instances_and_module_state_does_not_stop_the_run(tmp_path):
    suite = bad_suite(tmp_path, "Stateful", [{"id": "a", "prompt": "Note."}, {"id": "b", "prompt": "Note."}])
    first, second = suite.episode("a"), suite.episode("b")
    first.reset(), second.reset()
    first.step(call("note", text="one"))
    assert second.step(call("note", text="two")).observation.tool_results[0].content == "1"  # not 2
    assert first.step(ANSWER).reward == 1.0 and second.step(ANSWER).reward == 1.0
    assert user_env.MODULE_LOG[-2:] == ["one", "two"]  # module state is shared, as under TRL (documented)


def test_a_reset_that_fails_for_one_row_ends_that_episode_unlabelled_and_the_others_run(tmp_path, capsys):
    rows = [{"id": "good", "prompt": "Ping."}, {"id": "bad", "prompt": "Ping."}]
    suite = bad_suite(tmp_path, "ResetFails", rows)
    _, [bad], trajectory = play(suite, "bad", call("ping"))
    assert bad.done and bad.reward == 0.0 and trajectory.turns[0].verdict.error_type == RESET_FAILED
    assert diagnose(trajectory, suite.task("bad")).labels == (None,)  # the environment's fault: left out
    play(suite, "bad", call("ping"))  # said once per row, not per rollout
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line == (
        "seal-hub: environment class ResetFails, row 1 (task bad): reset raised RuntimeError: row bad cannot "
        "start; episode not scored"
    )
    _, [good, end], _ = play(suite, "good", call("ping"), ANSWER)
    assert good.observation.tool_results[0].content == "pong" and end.reward == 1.0


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("nan", "returned nan (not a finite number)"),
        ("string", "returned '1.0' (not a finite number)"),
        ("none", None),  # TRL's "not mine": with no other source, the rollout is unscored
        ("raise", "raised ZeroDivisionError: no score"),
    ],
)
def test_a_reward_that_is_no_number_scores_0_with_one_line(tmp_path, capsys, kind, said):
    suite = bad_suite(tmp_path, "BadReward", [{"id": "r", "prompt": "Go.", "reward": kind}])
    _, [end], trajectory = play(suite, "r", ANSWER)
    assert end.done and end.reward == 0.0 and trajectory.turns[0].verdict.error_type == REWARD_INVALID
    assert diagnose(trajectory, suite.task("r")).labels == (None,)
    [line] = capsys.readouterr().err.strip().splitlines()
    said = f"get_reward {said}" if said else "no reward source scored it (every one of BadReward returned None)"
    assert line == f"seal-hub: environment class BadReward, row 0 (task r): {said}; reward 0"
    assert play(bad_suite(tmp_path, "BadReward", [{"id": "ok", "prompt": "Go."}]), "ok", ANSWER)[1][0].reward == 0.5


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        ("helpers.user_env:Nope", "module helpers.user_env has no 'Nope'"),
        ("helpers.no_such_module:Env", "no module 'helpers.no_such_module' to import"),
        ("helpers.user_env:PANTRY", "PANTRY is a str, not a class"),
        ("helpers.user_env:NoDocstring", "environment class NoDocstring, tool tool: its schema cannot be read"),
        ("helpers.user_env:Shelf", "defines no reset"),
        ("no colon", "give the class as 'package.module:Class'"),
    ],
)
def test_an_unusable_class_is_one_line_naming_it(pantry_data, environment, message):
    with pytest.raises(SuiteError, match=message) as raised:
        resolve_suite(environment=environment, dataset=str(pantry_data))
    assert "\n" not in str(raised.value)


def test_a_row_without_a_prompt_starts_from_an_empty_user_message_as_trl_does_and_a_missing_dataset_is_one_line(
    tmp_path,
):
    data = write_jsonl(tmp_path / "rows.jsonl", [{"prompt": "ok"}, {"question": "no prompt"}])
    suite = resolve_suite(environment=PANTRY, dataset=str(data))  # TRL 1.16: reset's text is then the prompt
    assert [(m.role, m.content) for m in suite.task("1").messages] == [("user", "")]
    with pytest.raises(SuiteError, match="needs dataset"):
        resolve_suite(environment=PANTRY)


# ----- the interface and the version -----


def test_the_interface_evolves_on_it_defaults_cued_and_hints_keyed_by_exception_class(pantry):
    from seal_hub.diagnosis import FailureProfile
    from seal_hub.envs.protocol import ToolResult
    from seal_hub.interface.evolve import EXCEPTION_HINTS, evolve, evolve_config_for, starting_interface

    start = starting_interface(pantry.name, "released", default_values=True, user_environment=pantry.record())
    [add, *_] = start.render_tools(pantry.tool_schemas)
    props = add["function"]["parameters"]["properties"]
    assert props["name"]["description"] == "the item's name [required]"
    assert props["shelf"]["description"] == 'where they go Allowed values: top, bottom Default: "top"'
    _, _, trajectory = play(pantry, "stock-1", call("take_item", name="pear"), call("take_item", name="x"), ANSWER)
    play_out = play(pantry, "take-1", call("take_item", name="pear", count=5), ANSWER)[2]
    raised = pantry.raised([trajectory, play_out])
    assert raised == {"KeyError": "", "OutOfStock": "The pantry holds fewer of that item than asked for."}
    config = evolve_config_for("full", tool_errors=True, default_values=True)
    evolved = evolve(start, FailureProfile(), config, raised=raised)
    hints = evolved.recovery_feedback.exception_hints
    assert hints["KeyError"] == EXCEPTION_HINTS["KeyError"]
    assert hints["OutOfStock"].startswith("the tool raised OutOfStock (The pantry holds fewer of that item")
    assert evolved.user_environment == start.user_environment  # every version keeps the record
    shown = evolved.render_result(ToolResult(None, "Error: OutOfStock: only 1 pear left", ErrorKind.TOOL_EXCEPTION))
    assert shown.splitlines()[-1] == f"Hint: {hints['OutOfStock']}"
    again = evolve(evolved, FailureProfile(), config, raised={})
    assert again is evolved  # hints once given are kept: nothing changed


def test_snapshots_without_the_new_fields_keep_their_hashes():
    from seal_hub.interface import InterfaceSnapshot

    snapshot = InterfaceSnapshot.null("bfcl")
    content = snapshot.model_dump(mode="json", exclude={"created_at", "content_hash"})
    for key in ("default_values",):
        del content["schema_cues"][key]
    del content["recovery_feedback"]["exception_hints"]
    del content["user_environment"]
    import hashlib

    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    assert snapshot.content_hash == hashlib.sha256(canonical.encode()).hexdigest()


def test_a_version_records_the_class_and_dataset_and_loads_back_warning_when_the_source_changed(
    pantry, pantry_data, tmp_path, capsys
):
    import seal_hub
    from seal_hub.interface.evolve import starting_interface

    record = pantry.record()
    assert record.class_path == PANTRY and record.dataset == str(pantry_data) and record.dataset_revision is None
    assert len(record.source_sha256) == 64 and record.tools == pantry.tool_schemas
    snapshot = starting_interface(pantry.name, "released", user_environment=record)
    path = snapshot.save(tmp_path / "v0.json")
    env = seal_hub.load_environment(str(path))
    assert env.suite.name == PANTRY and env.suite.split_ids("test") == pantry.split_ids("test")
    obs = env.reset("stock-1")
    obs = env.step('<tool_call>\n{"name": "add_item", "arguments": {"name": "apple"}}\n</tool_call>')
    assert not obs.done and obs.new_messages[0]["content"] == "apple: 1"
    assert env.step("Done.").reward == 1.0
    assert capsys.readouterr().err == ""
    changed = snapshot.model_copy(update={"user_environment": record.model_copy(update={"source_sha256": "0" * 64})})
    seal_hub.load_environment(changed)
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"seal-hub: warning: environment {PANTRY}: its source (sha256 {pantry.source_sha256[:12]})")
    assert line.endswith("differs from the version's (sha256 000000000000); running the current code")


def test_import_seal_hub_interface_still_loads_no_datasets():
    code = "import sys, seal_hub.interface, seal_hub.envs.user; print('datasets' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


# ----- end to end -----


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from seal_hub.models import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny"))


def test_train_with_environment_and_dataset_publishes_the_three_artifacts_and_eval_scores_the_adapter(
    tiny_dir, tmp_path, monkeypatch, capsys
):
    import pyarrow.parquet as pq

    from seal_hub.cli import main as cli_main
    from seal_hub.rollout.records import read_trajectories

    data = write_jsonl(tmp_path / "pantry.jsonl", PANTRY_ROWS)
    registry, out = tmp_path / "registry", tmp_path / "run"
    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(registry))
    flags = ["--environment", PANTRY, "--dataset", str(data), "--model_name_or_path", str(tiny_dir)]
    flags += ["--output_dir", str(out), "--max_steps", "2", "--per_device_train_batch_size", "2"]
    flags += ["--num_generations", "2", "--max_new_tokens", "8", "--publish_run", RUN, "--publish_backend", "local"]
    flags += ["--interface_mode", "full", "--sft_warmup_steps", "0", "--held_out_comparison", "false"]
    flags += ["--max_steps_per_turn", "2", "--save_steps", "1", "--disable_tqdm", "true"]
    assert cli_main(["train", *flags]) == 0
    printed = capsys.readouterr().out
    assert "SEAL run summary" in printed and f"published: {RUN}-trajectories" in printed
    suite = resolve_suite(environment=PANTRY, dataset=str(data))
    test_ids = set(suite.split_ids("test"))
    for step in (1, 2):
        folder = out / "iterations" / f"step_{step:06d}"
        trajectories = read_trajectories(folder / "trajectories.parquet")
        assert len(trajectories) == 2 and not {t.task_id for t in trajectories} & test_ids  # never the held-out
        labels = pq.read_table(folder / "diagnoses.parquet").column("labels").to_pylist()
        assert all(len(row) == 1 and row[0] in {str(label) for label in Label} for row in labels)
    snapshots = [json.loads(p.read_text()) for p in sorted((out / "interfaces").glob("v*.json"))]
    assert len(snapshots) >= 2 and snapshots[-1]["parent"] is not None  # at least one evolved version
    assert all(s["user_environment"]["class_path"] == PANTRY for s in snapshots)
    assert snapshots[-1]["recovery_feedback"]["enabled"]
    for kind, repo in (("datasets", "trajectories"), ("datasets", "env"), ("models", "adapter")):
        assert (registry / kind / f"{RUN}-{repo}.git").is_dir()

    from seal_hub.hub.loading import load_interface

    published = load_interface(f"local://{RUN}-env@v1")  # the evolved version step 2 trained against
    assert published.parent == "v0" and published.user_environment.source_sha256 == suite.source_sha256

    evaluated = tmp_path / "eval"
    eval_flags = ["--model", str(tiny_dir), "--adapter", f"local://{RUN}-adapter@iter-2"]
    eval_flags += ["--environment", PANTRY, "--dataset", str(data), "--output_dir", str(evaluated)]
    eval_flags += ["--max_new_tokens", "8", "--no_progress"]
    assert cli_main(["eval", *eval_flags]) == 0
    results = json.loads((evaluated / "results.json").read_text())
    assert results["suite"] == PANTRY and results["num_tasks"] == len(test_ids)
    card = {"dataset_type": "pantry.jsonl", "dataset_name": "Pantry", "task_name": "Multi-turn tool use"}
    assert results["card"] == card  # a local dataset is named by its file's name: no host path on a card
    from seal_hub.evaluation.publish import _eval_results

    scored = _eval_results(results, "seal-hub eval", "local://x")  # the adapter card's model-index names the dataset
    assert {(r.dataset_type, r.dataset_name) for r in scored} == {("pantry.jsonl", "Pantry")}
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith(f"eval {PANTRY}: avg ")
    # the published version alone names its environment: --interface without --environment / --dataset
    by_version = ["--model", str(tiny_dir), "--interface", f"local://{RUN}-env@v1", "--limit", "1"]
    assert cli_main(["eval", *by_version, "--output_dir", str(tmp_path / "eval-v1"), "--no_progress"]) == 0
    assert json.loads((tmp_path / "eval-v1" / "results.json").read_text())["suite"] == PANTRY


def test_a_warm_up_on_a_dataset_without_an_answer_key_is_refused_before_any_model_loads(pantry_data, monkeypatch):
    from seal_hub.cli import main as cli_main
    from seal_hub.scripts import seal

    monkeypatch.setattr(seal, "load_policy", lambda *a, **k: pytest.fail("the model loaded before the refusal"))
    flags = ["--environment", PANTRY, "--dataset", str(pantry_data), "--sft_warmup_steps", "2"]
    with pytest.raises(ValueError, match="reference_calls column"):
        cli_main(["train", *flags, "--publish_run", "", "--held_out_comparison", "false"])


def test_the_comparisons_reproduce_line_names_the_environment_and_its_split_so_eval_scores_the_same_tasks(tmp_path):
    import shlex

    from seal_hub.cli import build_parser
    from seal_hub.cli_args import EnvironmentArguments, from_namespace
    from seal_hub.evaluation import EvalProtocol
    from seal_hub.training.comparison import HeldOutPlan

    data = write_jsonl(tmp_path / "pantry.jsonl", PANTRY_ROWS)
    suite = resolve_suite(environment=PANTRY, dataset=str(data), eval_fraction=0.4)
    test = suite.select(suite.split_ids("test"))
    plan = HeldOutPlan(suite, tuple(test), EvalProtocol(max_new_tokens=8), "default")
    flags = plan.eval_flags()
    assert f"--environment {PANTRY} --dataset {data}" in flags and "--eval_fraction 0.4" in flags
    assert "--suite" not in flags
    args = build_parser().parse_args(["eval", "--model", "tiny", *shlex.split(flags)])
    again = resolve_suite(**from_namespace(EnvironmentArguments, args).environment_options())
    assert again.split_ids(args.split)[: args.limit] == tuple(task.id for task in test)
    assert "--max_live_episodes" not in flags  # the default batch: nothing to say
    batched = HeldOutPlan(suite, tuple(test), EvalProtocol(max_new_tokens=8, max_live_episodes=5), "default")
    args = build_parser().parse_args(["eval", "--model", "tiny", *shlex.split(batched.eval_flags())])
    assert args.max_live_episodes == 5  # rows batched as the run batched them: the same rounding


def test_rollout_and_diagnose_take_the_environment_and_dataset(tiny_dir, tmp_path, capsys):
    from seal_hub.cli import main as cli_main
    from seal_hub.rollout.records import read_trajectories

    data = write_jsonl(tmp_path / "pantry.jsonl", PANTRY_ROWS)
    named = ["--environment", PANTRY, "--dataset", str(data)]
    out = tmp_path / "rollouts"
    flags = ["--model", str(tiny_dir), "--split", "train", "--limit", "3", "--num_generations", "2"]
    flags += ["--max_new_tokens", "8", "--output_dir", str(out)]
    assert cli_main(["rollout", *flags, *named]) == 0
    trajectories = read_trajectories(out / "trajectories.parquet")
    suite = resolve_suite(environment=PANTRY, dataset=str(data))
    assert len(trajectories) == 6 and {t.task_id for t in trajectories} <= set(suite.split_ids("train"))
    capsys.readouterr()
    assert cli_main(["diagnose", str(out), *named]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("6 rollouts, 6 labelled turns")  # one labelled turn per episode
