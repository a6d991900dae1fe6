"""Our verifier against bfcl-eval's official multi_turn_checker: ground truth and perturbed trajectories."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from helpers.extras import require_bfcl
from helpers.perturb import KINDS, perturb

from seal_hub.envs.bfcl import EpisodeConfig, GroundTruthTrace, ground_truth_steps, replay
from seal_hub.envs.bfcl.official import official_check, release_instances
from seal_hub.envs.bfcl.replay import verify_ground_truth

require_bfcl()

BFCL_PROTOCOL = EpisodeConfig(allow_hidden_tools=True)


def test_all_800_ground_truth_replays_pass_and_the_official_checker_agrees(suite):
    report = verify_ground_truth(suite, list(suite.tasks.values()))
    assert report.total == 800
    assert len(report.verified) == 800, report.failed
    assert report.checked == 800 and report.disagreements == ()


def test_ground_truth_quirks_are_reported(suite):
    """BFCL data that the paper's stricter training settings refuse: the report names each call."""
    report = verify_ground_truth(suite, suite.select(["multi_turn_miss_func_49", "multi_turn_base_173"]))
    assert any("multi_turn_miss_func_49 turn 1: tail -> withheld_tool" in q for q in report.quirks)
    assert any("multi_turn_base_173 turn 3: close_ticket -> wrong_type" in q for q in report.quirks)


def test_trace_outputs_equal_bfcl_eval_execution_outputs(suite):
    """The cached ground-truth outputs are the strings bfcl-eval's own executor produces."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

    rng = random.Random(1)
    for task in rng.sample(list(suite.tasks.values()), 80):
        trace = GroundTruthTrace.compute(task)
        name = f"trace_test_{task.id}"
        try:
            for turn, source in enumerate(task.ground_truth_source):
                outputs, _ = execute_multi_turn_func_call(
                    list(source),
                    task.raw_entry()["initial_config"],
                    list(task.involved_classes),
                    name,
                    task.id,
                    long_context=task.long_context,
                )
                assert tuple(outputs) == trace.turns[turn].outputs, (task.id, turn)
        finally:
            release_instances(name)


def _perturbed(suite, seed: int, per_kind: int):
    rng = random.Random(seed)
    tasks = list(suite.tasks.values())
    out = []
    for kind in KINDS:
        made = 0
        for task in rng.sample(tasks, len(tasks)):
            steps = perturb(task, kind, rng)
            if steps is not None:
                out.append((kind, task, steps))
                made += 1
                if made == per_kind:
                    break
    return out


@pytest.mark.parametrize("strict", [False, True], ids=["official", "strict_abstention"])
def test_perturbed_trajectories_agree_with_the_official_checker(suite, strict):
    cases = _perturbed(suite, seed=0, per_kind=60)
    assert len(cases) >= 200
    config = EpisodeConfig(allow_hidden_tools=True, strict_abstention=strict)
    outcomes: Counter = Counter()
    for kind, task, steps in cases:
        ours = replay(suite.episode(task, config), steps)
        official = official_check(task, steps, strict_abstention=strict)
        assert ours.passed == official["valid"], (kind, task.id, ours.error_type, official.get("error_type"))
        if not strict and not ours.passed:
            # the first failing turn is the one bfcl-eval reports, with the same error type
            assert ours.error_type == official["error_type"], (kind, task.id)
        outcomes[(kind, ours.passed)] += 1
    # the perturbations must really exercise both verdicts
    assert sum(n for (_, passed), n in outcomes.items() if not passed) >= 100, outcomes
    assert sum(n for (_, passed), n in outcomes.items() if passed) >= 40, outcomes
    assert outcomes[("split_step", True)] >= 30  # splitting a turn's calls over two steps changes nothing
    if strict:
        assert outcomes[("call_on_empty_turn", False)] == sum(
            n for (k, _), n in outcomes.items() if k == "call_on_empty_turn"
        )


def test_error_types_cover_every_official_kind(suite):
    cases = _perturbed(suite, seed=3, per_kind=40)
    seen = set()
    for _, task, steps in cases:
        seen.add(replay(suite.episode(task, BFCL_PROTOCOL), steps).error_type)
    assert {
        "multi_turn:instance_state_mismatch",
        "multi_turn:execution_response_mismatch",
        "multi_turn:empty_turn_model_response",
    } <= seen


def test_every_turn_gets_a_verdict_even_after_a_failure(suite):
    task = suite.task("multi_turn_base_0")
    steps = ground_truth_steps(task)
    steps[0] = []  # the model does nothing in the first turn
    verdict = replay(suite.episode(task, BFCL_PROTOCOL), steps)
    assert len(verdict.turns) == task.num_turns
    assert verdict.turns[0].error_type == "multi_turn:empty_turn_model_response"
    assert not verdict.turns[0].passed and verdict.reward == 0.0


def test_an_instance_present_on_one_side_only_is_a_state_difference_named_by_its_class(suite):
    from seal_hub.envs.bfcl.execution import instantiate
    from seal_hub.envs.bfcl.verifier import STATE_MISMATCH, check_turn

    task = suite.task("multi_turn_base_0")
    trace = suite.ground_truth(task)
    instances = instantiate(task)
    name = task.involved_classes[0]
    del instances[name]
    verdict = check_turn(0, trace.turns[0], True, instances, list(trace.turns[0].outputs), 1)
    assert not verdict.passed and verdict.error_type == STATE_MISMATCH
    assert name in verdict.state_differences  # the whole instance, with no attribute
