"""Turn labels, rollout weights and batch failure profiles."""

from __future__ import annotations

import json
import random

import pytest
from helpers.extras import require_bfcl
from helpers.perturb import KINDS, perturb
from helpers.turns import labels_of

from seal_hub.diagnosis import DEFAULT_RHO, FailureProfile, Label, RolloutDiagnosis
from seal_hub.envs.bfcl import EpisodeConfig, ground_truth_steps
from seal_hub.envs.bfcl.labels import OFFICIAL_ERROR_LABELS, label_turn
from seal_hub.envs.bfcl.official import official_check
from seal_hub.envs.protocol import ToolCall
from seal_hub.rollout.records import CallRecord, ParseErrorRecord, ResultRecord, StepRecord, TurnRecord, VerdictRecord

require_bfcl()


def test_every_ground_truth_turn_is_labelled_a_success(suite):
    """All 800 replays: turns with calls are `pass`, turns without are `correct_abstention`."""
    seen = set()
    for task in suite.tasks.values():
        labels, verdict = labels_of(suite, task, ground_truth_steps(task))
        expected = [Label.PASS if calls else Label.CORRECT_ABSTENTION for calls in task.ground_truth]
        assert labels == expected, task.id
        seen.update(labels)
    assert seen == {Label.PASS, Label.CORRECT_ABSTENTION}


def test_labels_agree_with_the_official_error_type(suite):
    rng = random.Random(5)
    checked = 0
    by_type: dict[str, set] = {}
    for kind in KINDS:
        for task in rng.sample(list(suite.tasks.values()), 60):
            steps = perturb(task, kind, rng)
            if steps is None:
                continue
            official = official_check(task, steps)
            labels, verdict = labels_of(suite, task, steps)
            if official["valid"]:
                continue
            label = labels[next(t.turn for t in verdict.turns if not t.passed)]
            assert label in OFFICIAL_ERROR_LABELS[official["error_type"]], (
                task.id,
                kind,
                official["error_type"],
                label,
            )
            by_type.setdefault(official["error_type"], set()).add(label)
            checked += 1
    assert checked >= 100
    assert set(by_type) == {
        "multi_turn:empty_turn_model_response",
        "multi_turn:instance_state_mismatch",
        "multi_turn:execution_response_mismatch",
    }


# ----- one hand-built trajectory per label -----

TASK = "multi_turn_base_0"  # turn 0 ground truth: cd(folder='document'), mkdir(dir_name='temp'), mv(...)


def turn(steps, verdict) -> TurnRecord:
    return TurnRecord(index=0, steps=steps, verdict=verdict)


def step(calls=(), results=(), parse_errors=()) -> StepRecord:
    return StepRecord(
        text="",
        tool_calls=[CallRecord(name=n, arguments=json.dumps(a)) for n, a in calls],
        results=[ResultRecord(content=c, error_kind=k, executed=e) for c, k, e in results],
        parse_errors=[ParseErrorRecord(kind=k, message="m") for k in parse_errors],
    )


def fail(error_type, model_calls=1, expects=True):
    return VerdictRecord(passed=False, expects_calls=expects, model_calls=model_calls, error_type=error_type)


STATE = "multi_turn:instance_state_mismatch"
RESPONSE = "multi_turn:execution_response_mismatch"


# each case: a hand-built turn, whether the ground truth calls tools ('gt') or not ('none'), the label it gets
HAND_BUILT = [
    (
        turn(
            [step([("ls", {})], [("{}", None, True)])],
            VerdictRecord(passed=True, expects_calls=False, model_calls=1),
        ),
        (),
        Label.SPURIOUS_TOOL_CALL,
    ),
    (turn([step()], VerdictRecord(passed=True, expects_calls=False, model_calls=0)), (), Label.CORRECT_ABSTENTION),
    (turn([step()], fail("multi_turn:empty_turn_model_response", 0)), "gt", Label.MISSING_TOOL_CALL),
    (
        turn([step(parse_errors=["invalid_json"])], fail("multi_turn:empty_turn_model_response", 0)),
        "gt",
        Label.INVALID_TOOL_CALL,
    ),
    (
        turn([step([("cd", {"folder": 1})], [("x", "wrong_type", True)])], fail(STATE)),
        "gt",
        Label.INVALID_TOOL_CALL,
    ),
    (turn([step([("nope", {})], [("Error", "unknown_tool", False)])], fail(STATE)), "gt", Label.INVALID_TOOL_CALL),
    (
        turn(
            [
                step(
                    [
                        ("cd", {"folder": "document"}),
                        ("mkdir", {"dir_name": "tmp"}),
                        ("mv", {"source": "final_report.pdf", "destination": "temp"}),
                    ],
                    [("{}", None, True)] * 3,
                )
            ],
            fail(STATE),
        ),
        "gt",
        Label.ARGUMENT_MISMATCH,
    ),
    (
        turn(
            [step([("cd", {"folder": "document"})], [("{}", None, True)])],
            VerdictRecord(
                passed=False,
                expects_calls=True,
                model_calls=1,
                error_type=STATE,
                state_differences=["TwitterAPI", "GorillaFileSystem.root"],
            ),
        ),
        "gt",
        Label.INSTANCE_MISMATCH,
    ),
    (  # another class's tool is not an instance mismatch (the released meaning): the state check decides
        turn([step([("post_tweet", {"content": "hi"})], [("{}", None, True)])], fail(STATE)),
        "gt",
        Label.STATE_MISMATCH,
    ),
    (
        turn([step([("cd", {"folder": "document"})], [("{}", None, True)])], fail(STATE)),
        "gt",
        Label.STATE_MISMATCH,
    ),
    (
        turn([step([("cd", {"folder": "nowhere"})], [('{"error": "cd: no"}', "bad_path", True)])], fail(RESPONSE)),
        "gt",
        Label.RECOVERY_FAILURE,
    ),
    (
        turn(
            [
                step([("cd", {"folder": "x"})], [('{"error": "no"}', "bad_path", True)]),
                step([("cd", {"folder": "document"})], [("{}", None, True)]),
            ],
            fail(RESPONSE),
        ),
        "gt",
        Label.RESPONSE_MISMATCH,
    ),
    (
        turn(
            [step([("cd", {"folder": "document"})], [("{}", None, True)])],
            VerdictRecord(passed=True, expects_calls=True, model_calls=1),
        ),
        "gt",
        Label.PASS,
    ),
    (TurnRecord(index=0, steps=[], verdict=None), "gt", Label.MISSING_TOOL_CALL),
    (TurnRecord(index=0, steps=[], verdict=None), "none", Label.CORRECT_ABSTENTION),
    (
        TurnRecord(index=0, steps=[step([("ls", {})], [("{}", None, True)])], verdict=None),
        "none",
        Label.SPURIOUS_TOOL_CALL,
    ),
    (
        TurnRecord(index=0, steps=[step([("cd", {"folder": "document"})], [("{}", None, True)])], verdict=None),
        "gt",
        Label.MISSING_TOOL_CALL,
    ),
]
HAND_BUILT_IDS = [
    "spurious",
    "abstention",
    "missing",
    "invalid_parse",
    "invalid_type",
    "invalid_unknown",
    "argument",
    "instance",
    "other_class_tool",
    "state",
    "recovery",
    "repaired_then_response",
    "pass",
    "unreached",
    "unreached_abstention",
    "unfinished_spurious",
    "unfinished_with_calls",
]


@pytest.mark.parametrize(("record", "truth", "expected"), HAND_BUILT, ids=HAND_BUILT_IDS)
def test_hand_built_turns_get_their_label(suite, record, truth, expected):
    task = suite.task(TASK)
    calls = task.ground_truth[0] if truth == "gt" else ()
    assert label_turn(record, calls) == expected


def test_every_label_is_covered_by_the_hand_built_cases():
    covered = {expected for _, _, expected in HAND_BUILT}
    assert covered == set(Label), f"no hand-built case for {sorted(set(Label) - covered)}"
    assert len(HAND_BUILT_IDS) == len(HAND_BUILT)


def test_real_episode_labels(suite):
    """Labels from real executions: a withheld tool is invalid; doing nothing where calls are due is missing."""
    task = suite.task("multi_turn_miss_func_0")
    steps = ground_truth_steps(task)
    steps[0] = [[ToolCall("sort", {"file_name": "final_report.pdf"})]]  # 'sort' is withheld until turn 3
    labels, _ = labels_of(suite, task, steps, config=EpisodeConfig())
    assert labels[0] == Label.INVALID_TOOL_CALL
    steps = ground_truth_steps(task)
    steps[1] = []
    labels, _ = labels_of(suite, task, steps)
    assert labels[0] == Label.PASS and labels[1] == Label.MISSING_TOOL_CALL


def test_weight_follows_the_formula():
    d = RolloutDiagnosis(
        "t", 0.0, (Label.MISSING_TOOL_CALL, Label.MISSING_TOOL_CALL, Label.PASS, Label.SPURIOUS_TOOL_CALL, None)
    )
    assert d.profile == {Label.MISSING_TOOL_CALL: 0.5, Label.PASS: 0.25, Label.SPURIOUS_TOOL_CALL: 0.25}
    assert d.weight() == pytest.approx(0.5 * 1.5 + 0.25 * 1.0 + 0.25 * 2.0)  # 1.5
    assert RolloutDiagnosis("t", 0.0, (Label.INSTANCE_MISMATCH,)).weight() == pytest.approx(0.6)
    assert (
        RolloutDiagnosis("t", 0.0, (Label.SPURIOUS_TOOL_CALL,)).weight(
            dict(DEFAULT_RHO) | {Label.SPURIOUS_TOOL_CALL: 3.0}
        )
        == 2.0
    )  # clipped above
    assert (
        RolloutDiagnosis("t", 0.0, (Label.INSTANCE_MISMATCH,)).weight(
            dict(DEFAULT_RHO) | {Label.INSTANCE_MISMATCH: 0.1}
        )
        == 0.5
    )  # clipped below
    assert RolloutDiagnosis("t", 1.0, (None, None)).weight() == 1.0  # nothing labelled: neutral


def test_failure_profile_numbers():
    diagnoses = [
        RolloutDiagnosis("a", 0.0, (Label.MISSING_TOOL_CALL, Label.MISSING_TOOL_CALL, Label.PASS)),
        RolloutDiagnosis("b", 1.0, (Label.PASS, Label.CORRECT_ABSTENTION)),
        RolloutDiagnosis("c", 0.0, (Label.MISSING_TOOL_CALL, None)),
    ]
    profile = FailureProfile.of(diagnoses)
    assert profile.rollouts == 3 and profile.turns == 6
    missing = profile.get(Label.MISSING_TOOL_CALL)
    assert (missing.count, missing.prevalence, missing.mean_reward) == (3, 0.5, 0.0)
    passing = profile.get(Label.PASS)
    assert (passing.count, passing.prevalence, passing.mean_reward) == (2, pytest.approx(1 / 3), 0.5)
    assert profile.get(Label.STATE_MISMATCH).count == 0
    # mean reward over turn occurrences: pass turns in rollouts of reward 0, 1, 1, 1 -> 3/4 (per rollout: 1/2)
    more = FailureProfile.of([*diagnoses, RolloutDiagnosis("d", 1.0, (Label.PASS, Label.PASS))])
    assert more.get(Label.PASS).mean_reward == 0.75
    assert FailureProfile.from_dict(json.loads(json.dumps(profile.to_dict()))) == profile


def test_diagnosis_rows_fit_their_features(suite, tmp_path):
    from datasets import Dataset

    from seal_hub.diagnosis.records import DIAGNOSIS_FEATURES, diagnosis_rows
    from seal_hub.rollout.records import Trajectory

    trajectory = Trajectory(
        task_id="multi_turn_base_0",
        category="base",
        rollout_index=1,
        seed=0,
        policy_id="p",
        interface_version="v0",
        messages=[],
        turns=[],
        reward=0.0,
        passed=False,
        prompt_length=0,
        token_ids=[],
        token_mask=[],
        logprobs=[],
        num_steps=0,
        num_generated_tokens=0,
        generation_seconds=0.0,
        environment_seconds=0.0,
        total_seconds=0.0,
    )
    d = RolloutDiagnosis("multi_turn_base_0", 0.0, (Label.MISSING_TOOL_CALL, None))
    rows = diagnosis_rows([trajectory], [d])
    assert rows == [
        {
            "task_id": "multi_turn_base_0",
            "category": "base",
            "rollout_index": 1,
            "interface_version": "v0",
            "reward": 0.0,
            "labels": ["missing_tool_call", None],
            "weight": 1.5,
        }
    ]
    Dataset.from_list(rows, features=DIAGNOSIS_FEATURES).to_parquet(str(tmp_path / "d.parquet"))
    assert Dataset.from_parquet(str(tmp_path / "d.parquet")).to_list() == rows
