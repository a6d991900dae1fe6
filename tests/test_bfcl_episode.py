"""Episodes: isolation, the step API, tools revealed at their turn, limits."""

from __future__ import annotations

import gc
import weakref

import pytest
from helpers.extras import require_bfcl

from seal_hub.envs.bfcl import EpisodeConfig, ground_truth_steps, replay
from seal_hub.envs.bfcl.execution import instantiate
from seal_hub.envs.bfcl.verifier import public_state
from seal_hub.envs.protocol import Action, EpisodeError, ToolCall

require_bfcl()


def names(tools):
    return {t["function"]["name"] for t in tools}


def test_rollouts_of_the_same_task_are_isolated(suite):
    task = suite.task("multi_turn_base_0")
    first = suite.episode(task)
    second = suite.episode(task)
    first.reset()
    second.reset()
    fresh = {name: public_state(inst) for name, inst in instantiate(task).items()}
    first.step(Action(tool_calls=(ToolCall("mkdir", {"dir_name": "only_in_first"}),)))
    assert first._instances["GorillaFileSystem"].root != second._instances["GorillaFileSystem"].root
    assert {n: public_state(i) for n, i in second._instances.items()} == fresh
    # a complete replay on one episode leaves the next one starting from the initial state
    assert replay(suite.episode(task), ground_truth_steps(task)).passed
    third = suite.episode(task)
    third.reset()
    assert {n: public_state(i) for n, i in third._instances.items()} == fresh


def test_close_frees_the_instances(suite):
    episode = suite.episode("multi_turn_base_1")
    episode.reset()
    ref = weakref.ref(next(iter(episode._instances.values())))
    episode.close()
    gc.collect()
    assert ref() is None
    with pytest.raises(EpisodeError):
        episode.step(Action(content="hi"))
    with pytest.raises(EpisodeError):
        episode.reset()


def test_reset_gives_the_first_turn_and_the_visible_tools(suite):
    task = suite.task("multi_turn_base_0")
    obs = suite.episode(task).reset()
    assert obs.turn_index == 0
    assert [m.to_chat() for m in obs.messages] == [{"role": "user", "content": task.turns[0][0].content}]
    assert "cp" not in names(obs.tools)  # excluded by the task
    assert {"cd", "ls", "post_tweet"} <= names(obs.tools)


def test_withheld_tools_appear_at_their_turn_only(suite):
    task = suite.task("multi_turn_miss_func_0")  # 'sort' is withheld until turn 3
    episode = suite.episode(task)
    obs = episode.reset()
    seen = [("sort" in names(obs.tools), obs.tools_changed)]
    for _ in range(task.num_turns - 1):
        obs = episode.step(Action(content="ok")).observation
        seen.append(("sort" in names(obs.tools), obs.tools_changed))
    assert seen == [(False, False), (False, False), (False, False), (True, True), (True, False)]
    assert obs.turn_index == 4


def test_a_turn_ends_with_a_message_without_calls_and_the_episode_with_a_reward(suite):
    task = suite.task("multi_turn_base_0")
    episode = suite.episode(task)
    episode.reset()
    results = []
    for turn, calls in enumerate(task.ground_truth):
        if calls:
            step = episode.step(Action(tool_calls=calls))
            assert step.observation.turn_index == turn and not step.done
            assert len(step.observation.tool_results) == len(calls)
            assert all(r.executed and r.error_kind is None for r in step.observation.tool_results)
        results.append(episode.step(Action(content="done")))
    assert [r.done for r in results] == [False] * (task.num_turns - 1) + [True]
    assert results[-1].reward == 1.0 == episode.verdict.reward
    assert [t.passed for t in episode.verdict.turns] == [True] * task.num_turns
    with pytest.raises(EpisodeError, match="finished"):
        episode.step(Action(content="more"))


def test_step_before_reset_is_a_caller_error(suite):
    with pytest.raises(EpisodeError, match="reset"):
        suite.episode("multi_turn_base_0").step(Action(content="hi"))


def test_more_steps_than_the_limit_force_terminates(suite):
    episode = suite.episode("multi_turn_base_0", EpisodeConfig(max_steps_per_turn=3))
    episode.reset()
    ls = Action(tool_calls=(ToolCall("ls", {}),))
    for _ in range(3):
        assert not episode.step(ls).done
    last = episode.step(ls)
    assert last.done and last.truncated and last.reward == 0.0
    assert last.observation.tool_results == ()  # the over-limit step is not executed
    assert len(episode.outputs) == 3
    assert episode.verdict.error_type == "multi_turn:force_terminated"


def test_config_rejects_nonsense():
    with pytest.raises(ValueError, match="max_steps_per_turn"):
        EpisodeConfig(max_steps_per_turn=0)


def test_unknown_task_id_is_a_clear_error(suite):
    with pytest.raises(KeyError, match="multi_turn_base_0"):
        suite.task("multi_turn_nope_1")
    with pytest.raises(KeyError, match="2 task id"):
        suite.select(["multi_turn_base_0", "x", "y"])


def test_the_episode_budget_counts_every_model_step_and_cuts_the_episode(suite):
    task = suite.task("multi_turn_base_0")
    episode = suite.episode(task, EpisodeConfig(max_steps_per_episode=3))
    first = episode.reset()
    assert first.turn_index == 0
    ls = Action(tool_calls=(ToolCall("ls", {}),))
    assert not episode.step(ls).done
    assert not episode.step(Action(content="Done with turn 0.")).done  # a turn-ending step counts too
    last = episode.step(ls)
    assert last.done and last.truncated and last.reward == 0.0
    assert len(last.observation.tool_results) == 1 and last.observation.tool_results[0].executed  # step 3 ran
    assert last.observation.messages == ()
    assert episode.verdict.error_type == "multi_turn:force_terminated" and len(episode.verdict.turns) == 1
    with pytest.raises(EpisodeError, match="finished"):
        episode.step(ls)


def test_an_episode_that_finishes_on_its_last_allowed_step_keeps_its_reward(suite):
    task = suite.task("multi_turn_base_0")
    needed = sum(len(turn) + 1 for turn in ground_truth_steps(task))  # calling steps + one final message per turn
    for budget, reward in ((needed, 1.0), (needed - 1, 0.0)):
        episode = suite.episode(task, EpisodeConfig(max_steps_per_episode=budget))
        episode.reset()
        for turn in ground_truth_steps(task):
            for calls in turn:
                if not episode.done:
                    result = episode.step(Action(tool_calls=tuple(calls)))
            if not episode.done:
                result = episode.step(Action(content="Done."))
        assert result.done and result.reward == reward and result.truncated == (reward == 0.0)


def test_episode_budget_must_be_positive():
    with pytest.raises(ValueError, match="max_steps_per_episode"):
        EpisodeConfig(max_steps_per_episode=0)
