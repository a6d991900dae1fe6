"""TRL 1.16's whole environment contract as SEAL runs it (`seal_hub.envs.user.trl_setup.user_suite_from_trl`): any
zero-argument factory (a class inside a function, a partial, a function, a dict routed by the `environment`
column), reward functions called with TRL's keywords (`environments=` included; sync or async; None as "not
mine"; weights; `get_reward` beside them), async tools and `get_reward`, a dataset-free environment whose `reset`
makes the prompt, plain `tools=`, a continuous reward with and without a success threshold, and every way a reward
function fails: a scored-0, labelled rollout and one line naming the function and the row."""

from __future__ import annotations

import asyncio
import functools
import random

import pytest
from helpers import trl_envs
from helpers.trl_envs import Counter, Guess, Lamp, Safe

from seal_hub.envs.builtin import resolve_suite
from seal_hub.envs.protocol import Action, ToolCall
from seal_hub.envs.suite import Suite, SuiteError
from seal_hub.envs.user.episode import REWARD_INVALID
from seal_hub.envs.user.trl_setup import user_suite_from_trl

ANSWER = Action(content="Done.")
COUNT_ROWS = [{"prompt": [{"role": "user", "content": "Count to 2."}], "goal": 2}]


def call(tool: str, **arguments) -> Action:
    return Action(tool_calls=(ToolCall(tool, arguments),))


def play(suite, task_id: str, *actions: Action):
    """Reset `task_id`'s episode, step `actions` until it ends; (first observation, last step result, verdict)."""
    episode = suite.episode(task_id)
    first = episode.reset()
    result = None
    for action in actions:
        if episode.done:
            break
        result = episode.step(action)
    episode.close()
    return first, result, episode.verdict


# ----- factories -----


def test_a_class_defined_inside_a_function_is_a_factory_and_a_reward_function_reads_the_instances():
    class Local(Counter):  # not importable by name: TRL takes it, and so does SEAL
        pass

    setup = user_suite_from_trl(Local, trl_envs.counter_reward, train_dataset=COUNT_ROWS)
    assert isinstance(setup.suite, Suite) and len(setup.train_tasks) == 1 and setup.held_out_tasks == ()
    first, end, verdict = play(setup.suite, "0", call("increment", by=2), ANSWER)
    assert first.messages[-1].content == "Count to 2. (goal: 2)"  # reset's text appended to the last user message
    assert end.reward == verdict.reward == 1.0 and verdict.passed
    assert play(setup.suite, "0", call("increment"), ANSWER)[2].reward == 0.0
    record = setup.suite.record()
    assert not record.importable and len(record.source_sha256) == 64
    with pytest.raises(SuiteError, match="made on a setup given in Python"):
        type(setup.suite).from_record(record)


@pytest.mark.parametrize(
    "factory",
    [trl_envs.make_counter, functools.partial(Counter), lambda: Counter()],
    ids=["function", "partial", "lambda"],
)
def test_any_zero_argument_callable_is_a_factory(factory):
    setup = user_suite_from_trl(factory, trl_envs.counter_reward, train_dataset=COUNT_ROWS)
    assert [t["function"]["name"] for t in setup.suite.tool_schemas] == ["increment"]
    assert play(setup.suite, "0", call("increment", by=2), ANSWER)[2].reward == 1.0


def test_a_dict_of_factories_routes_each_row_by_its_environment_column_with_only_that_environments_tools():
    rows = [
        {"prompt": "Light it.", "environment": "lamp"},
        {"prompt": "Open it.", "environment": "safe", "code": "42"},
    ]
    setup = user_suite_from_trl({"lamp": Lamp, "safe": Safe}, train_dataset=rows)
    first, _, verdict = play(setup.suite, "0", call("switch_on"), ANSWER)
    assert [t["function"]["name"] for t in first.tools] == ["switch_on"] and verdict.reward == 1.0
    first, _, verdict = play(setup.suite, "1", call("switch_on"), ANSWER)
    assert [t["function"]["name"] for t in first.tools] == ["open_safe"] and verdict.reward == 0.0  # unknown tool
    assert play(setup.suite, "1", call("open_safe", code="42"), ANSWER)[2].reward == 1.0
    episode = setup.suite.episode("1")
    episode.reset()
    assert "environment" not in episode._instance.row  # TRL's control column never reaches reset
    with pytest.raises(SuiteError, match="environment 'cellar' is not among environment_factory's: lamp, safe"):
        user_suite_from_trl({"lamp": Lamp, "safe": Safe}, train_dataset=[{"prompt": "x", "environment": "cellar"}])


def test_the_command_line_takes_a_function_or_a_dict_as_environment_and_reward_functions_by_path(tmp_path):
    from helpers.user_env import write_jsonl

    data = write_jsonl(tmp_path / "count.jsonl", COUNT_ROWS)
    suite = resolve_suite(
        environment="helpers.trl_envs:make_counter",
        dataset=str(data),
        reward_funcs=("helpers.trl_envs:counter_reward",),
    )
    assert play(suite, "0", call("increment", by=2), ANSWER)[2].reward == 1.0
    assert suite.record().reward_funcs == ("helpers.trl_envs:counter_reward",) and suite.record().importable
    rooms = write_jsonl(tmp_path / "rooms.jsonl", [{"prompt": "Light it.", "environment": "lamp"}])
    assert play(
        resolve_suite(environment="helpers.trl_envs:ROOMS", dataset=str(rooms)), "0", call("switch_on"), ANSWER
    )[2].passed
    with pytest.raises(SuiteError, match="no reward source"):  # Counter has no get_reward and no function was given
        resolve_suite(environment="helpers.trl_envs:Counter", dataset=str(data))


# ----- async -----


def test_async_tools_and_an_async_get_reward_are_awaited_on_one_loop_within_the_time_limit(capsys):
    from helpers.trl_envs import AsyncShop

    setup = user_suite_from_trl(AsyncShop, train_dataset=[{"prompt": "Buy milk."}], call_timeout_s=1.0)
    episode = setup.suite.episode("0")
    episode.reset()
    result = episode.step(call("buy", item="milk"))
    assert result.observation.tool_results[0].content == "bought milk"
    first_loop = episode._instance.loop
    episode.step(call("buy", item="milk"))
    assert episode._instance.loop is first_loop and isinstance(first_loop, asyncio.AbstractEventLoop)
    episode.close()
    _, end, verdict = play(setup.suite, "0", call("buy", item="milk"), ANSWER)
    assert end.reward == verdict.reward == 1.0 and verdict.passed
    _, end, verdict = play(setup.suite, "0", call("wait", seconds=5), ANSWER)
    assert end.done and "TimeoutError: wait did not return within 1 s" in end.observation.tool_results[0].content
    assert "a tool call ran past the time limit" in capsys.readouterr().err


# ----- reward functions as TRL calls them -----


def test_reward_functions_get_trls_keywords_and_sum_with_get_reward_by_weight():
    trl_envs.SEEN.clear()
    rows = [{"prompt": "Light it.", "difficulty": "easy"}]
    setup = user_suite_from_trl(
        Lamp,
        [trl_envs.recording_reward, trl_envs.partial_credit, trl_envs.not_mine, trl_envs.async_reward],
        train_dataset=rows,
        reward_weights=[1.0, 2.0, 1.0, 4.0],
    )
    _, end, verdict = play(setup.suite, "0", call("switch_on"), Action(content="It is on."))
    assert end.reward == pytest.approx(0.0 + 2.0 * 0.5 + 4.0 * 0.25 + 1.0)  # None left out; get_reward weight 1
    [seen] = trl_envs.SEEN
    assert seen["prompts"] == [[{"role": "user", "content": "Light it."}]]
    [completion] = seen["completions"]
    assert completion[0]["tool_calls"] == [{"type": "function", "function": {"name": "switch_on", "arguments": {}}}]
    assert completion[1] == {"role": "tool", "name": "switch_on", "content": "on"}
    assert completion[-1] == {"role": "assistant", "content": "It is on."}
    assert seen["difficulty"] == ["easy"] and "prompt" not in seen and seen["trainer_state"] is None
    assert isinstance(seen["environments"][0], Lamp) and seen["completion_ids"] == [[]]
    assert callable(seen["log_metric"]) and callable(seen["log_extra"])
    with pytest.raises(SuiteError, match="reward_weights has 1 weight"):
        user_suite_from_trl(
            Lamp, [trl_envs.partial_credit, trl_envs.not_mine], train_dataset=rows, reward_weights=[1.0]
        )
    with pytest.raises(SuiteError, match="reward models .* are not supported"):
        user_suite_from_trl(Lamp, "some/reward-model", train_dataset=rows)


def test_plain_tools_with_a_reward_function_train_without_any_environment():
    rows = [{"prompt": "What is 2 + 3?"}]
    setup = user_suite_from_trl(None, trl_envs.answer_is_5, tools=[trl_envs.add], train_dataset=rows)
    first, end, verdict = play(setup.suite, "0", call("add", a=2, b=3), Action(content="It is 5."))
    assert [t["function"]["name"] for t in first.tools] == ["add"] and verdict.passed and end.reward == 1.0
    assert play(setup.suite, "0", call("add", a=2, b=3), Action(content="No idea."))[2].reward == 0.0
    with pytest.raises(SuiteError, match="no 'prompt' column"):  # without an environment, a row needs its prompt
        user_suite_from_trl(None, trl_envs.answer_is_5, tools=[trl_envs.add], train_dataset=[{"question": "?"}])


# ----- no dataset -----


def test_a_dataset_free_environment_trains_on_seeded_episodes_and_holds_out_others_that_replay():
    random.seed(123)
    before = random.random()
    random.seed(123)
    setup = user_suite_from_trl(Guess, train_episodes=4, held_out_episodes=3, episode_seed=7)
    assert [t.id for t in setup.train_tasks] == [f"episode-{i}" for i in range(4)]
    assert [t.id for t in setup.held_out_tasks] == [f"held-out-{i}" for i in range(3)]
    prompts = {t.id: play(setup.suite, t.id, ANSWER)[0].messages[-1].content for t in setup.suite.tasks.values()}
    assert len(set(prompts.values())) == 7  # every episode its own secret
    assert random.random() == before  # the caller's generator state is put back
    again = user_suite_from_trl(Guess, train_episodes=1, held_out_episodes=3, episode_seed=7)
    assert {t.id: play(again.suite, t.id, ANSWER)[0].messages[-1].content for t in again.held_out_tasks} == {
        t.id: prompts[t.id] for t in setup.held_out_tasks
    }
    record = setup.suite.record()
    assert record.importable and record.episodes == 3 and record.episode_seed == 7 and record.dataset is None
    replayed = type(setup.suite).from_record(record)  # how `seal-hub eval` replays a published version
    assert replayed.split_ids("test") == tuple(t.id for t in setup.held_out_tasks)
    assert play(replayed, "held-out-2", ANSWER)[0].messages[-1].content == prompts["held-out-2"]
    secret = int(prompts["held-out-0"].rsplit(" ", 1)[1].rstrip("."))
    assert play(replayed, "held-out-0", call("guess", number=secret), ANSWER)[2].passed
    with pytest.raises(SuiteError, match="set max_steps > 0"):
        user_suite_from_trl(Guess)
    with pytest.raises(SuiteError, match="a dict of factories routes rows"):
        user_suite_from_trl({"a": Guess}, train_episodes=2)


# ----- success threshold -----


def test_a_continuous_reward_passes_at_the_threshold_and_without_one_warns_once(capsys):
    rows = [{"prompt": "Light it."}, {"prompt": "Light it again."}]
    plain = user_suite_from_trl(None, trl_envs.partial_credit, tools=[trl_envs.add], train_dataset=rows).suite
    assert not play(plain, "0", ANSWER)[2].passed and not play(plain, "1", ANSWER)[2].passed
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("seal-hub: environment tools:add: a reward of 0.5 is neither 0 nor 1")
    assert "set success_threshold (--success_threshold)" in line
    setup = user_suite_from_trl(
        None, trl_envs.partial_credit, tools=[trl_envs.add], train_dataset=rows, success_threshold=0.5
    )
    assert play(setup.suite, "0", ANSWER)[2].passed and setup.suite.record().success_threshold == 0.5
    assert capsys.readouterr().err == ""


# ----- reward functions that fail -----


@pytest.mark.parametrize(
    ("func", "said"),
    [
        (trl_envs.raises, "reward function raises raised RuntimeError: judge is down"),
        (trl_envs.hangs, "reward function hangs ran past 0.5 s"),
        (trl_envs.gives_nan, "reward function gives_nan returned nan (not a finite number)"),
        (trl_envs.gives_string, "reward function gives_string returned '1.0' (not a finite number)"),
        (trl_envs.gives_two, "reward function gives_two returned 2 rewards for 1 completion"),
        (trl_envs.gives_float, "reward function gives_float returned float, not a list of one reward per completion"),
    ],
)
def test_a_reward_function_that_fails_scores_the_rollout_0_labelled_with_one_line_and_the_run_goes_on(
    func, said, capsys
):
    from seal_hub.envs.user.labels import label_turn
    from seal_hub.rollout.records import TurnRecord, VerdictRecord

    rows = [{"id": "r", "prompt": "Light it."}, {"id": "s", "prompt": "Light it."}]
    setup = user_suite_from_trl(Lamp, [func], train_dataset=rows, call_timeout_s=0.5)
    _, end, verdict = play(setup.suite, "r", call("switch_on"), ANSWER)  # get_reward would give 1
    assert end.done and end.reward == verdict.reward == 0.0 and not verdict.passed
    assert verdict.turns[0].error_type == REWARD_INVALID
    turn = TurnRecord(index=0, steps=[], verdict=VerdictRecord.of(verdict.turns[0]))
    assert label_turn(turn, 0.0, setup.suite.task("r")) is None  # the reward's fault: nothing to judge the model by
    play(setup.suite, "r", ANSWER)  # the same row again: said once
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line == f"seal-hub: environment class Lamp, row 0 (task r): {said}; reward 0"
    assert play(setup.suite, "s", ANSWER)[2].turns[0].error_type == REWARD_INVALID  # the next row: its own line
    assert "row 1 (task s)" in capsys.readouterr().err
