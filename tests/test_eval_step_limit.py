"""BFCL's step-limit rule (execute the extra step, then end) vs the training rule (refuse it), same behaviours.

bfcl-eval's inference loop (`base_handler.py`) counts a calling step after executing it and stops the
conversation once the count passes the limit; the checker only fails an entry whose list of turns is short. So
a 21st step on a last turn runs and the turn is verified, where the training rule refuses it. Each behaviour is
driven through both rules and, for the BFCL rule, against bfcl-eval's own checker on the same trajectory.
"""

from __future__ import annotations

import pytest
from helpers.extras import require_bfcl

from seal_hub.envs.bfcl import EpisodeConfig, replay
from seal_hub.envs.bfcl.official import official_check
from seal_hub.envs.protocol import Action, ToolCall

require_bfcl()

LIMIT = 3
TASK = "multi_turn_base_0"  # 4 turns, every turn's ground truth calls tools; `ls` changes no state


def _padded(task, turn: int, pad: int):
    """The ground truth with `pad` read-only `ls` steps before turn `turn`'s ground-truth step."""
    steps = [[list(calls)] if calls else [] for calls in task.ground_truth]
    steps[turn] = [[ToolCall("ls", {})] for _ in range(pad)] + steps[turn]
    return steps


def _verdicts(suite, steps):
    rules = {}
    for rule in ("refuse", "bfcl"):
        config = EpisodeConfig(max_steps_per_turn=LIMIT, allow_hidden_tools=True, step_limit=rule)
        rules[rule] = replay(suite.episode(TASK, config), steps)
    return rules


@pytest.mark.parametrize("turn", [0, 3])
def test_within_the_limit_both_rules_agree(suite, turn):
    task = suite.task(TASK)
    rules = _verdicts(suite, _padded(task, turn, LIMIT - 1))  # the ground-truth step is the LIMIT-th
    assert rules["refuse"].passed and rules["bfcl"].passed


def test_an_extra_step_on_an_earlier_turn_force_terminates_under_both(suite):
    task = suite.task(TASK)
    steps = _padded(task, 1, LIMIT)  # the ground-truth step is the (LIMIT+1)-th of turn 1
    rules = _verdicts(suite, steps)
    for verdict in rules.values():
        assert not verdict.passed and verdict.force_terminated
        assert verdict.error_type == "multi_turn:force_terminated"


def test_an_extra_step_on_the_last_turn_runs_and_is_verified_under_bfcl_only(suite):
    task = suite.task(TASK)
    last = task.num_turns - 1
    steps = _padded(task, last, LIMIT)  # the ground-truth step is the (LIMIT+1)-th of the last turn
    rules = _verdicts(suite, steps)
    assert rules["refuse"].force_terminated and not rules["refuse"].passed
    assert not rules["bfcl"].force_terminated and rules["bfcl"].passed
    assert len(rules["bfcl"].turns) == task.num_turns
    # bfcl-eval's checker, given the full list of turns its loop would have produced, passes it too
    assert official_check(task, steps)["valid"] is True


def test_bfcl_rule_verifies_a_wrong_last_turn_as_a_failure_not_a_termination(suite):
    task = suite.task(TASK)
    last = task.num_turns - 1
    steps = _padded(task, last, LIMIT)
    steps[last] = steps[last][:-1] + [[ToolCall("ls", {})]]  # the extra step does not do the work
    verdict = _verdicts(suite, steps)["bfcl"]
    assert not verdict.passed and not verdict.force_terminated
    assert [t.turn for t in verdict.turns if not t.passed][:1] == [last]
    assert official_check(task, steps)["valid"] is False


def test_bfcl_rule_returns_the_extra_steps_results(suite):
    config = EpisodeConfig(max_steps_per_turn=1, step_limit="bfcl")
    episode = suite.episode(TASK, config)
    episode.reset()
    ls = (ToolCall("ls", {}),)
    assert not episode.step(Action(tool_calls=ls)).done
    cut = episode.step(Action(tool_calls=ls))
    assert cut.done and cut.truncated and cut.reward == 0.0
    assert len(cut.observation.tool_results) == 1 and cut.observation.tool_results[0].executed
    assert len(episode.outputs) == 2


def test_unknown_rule_is_refused():
    with pytest.raises(ValueError, match="step_limit"):
        EpisodeConfig(step_limit="sometimes")
