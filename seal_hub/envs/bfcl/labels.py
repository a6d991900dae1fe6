"""BFCL multi-turn's turn labels: the rules that label each user turn of a finished rollout.

Labels come from deterministic rules over the execution trace (each step's calls, parse errors
and tool results) and the verifier's per-turn verdict; no LLM judge, and labels never change the reward. Per turn:

- ground truth makes no call: `spurious_tool_call` if the model attempted one, else `correct_abstention`;
- ground truth calls tools and the turn passed: `pass`;
- otherwise the first that applies, in this priority (the paper's order, with `instance_mismatch`, which
  the paper's text does not rank, placed before the state check it refines):
  `invalid_tool_call` (a parse error, or a call refused for not fitting the schema: unknown / hidden tool,
  arguments not an object, missing / unexpected / ill-typed / oversized arguments)
  > `argument_mismatch` (the same tools as the ground truth, with other argument values)
  > `instance_mismatch` (the released meaning: the sets of API instances, i.e. classes instantiated, differ
    between the model's execution and the ground truth's; rare on BFCL, where both instantiate the task's
    classes; calls to another class's tools are a `state_mismatch` or `response_mismatch` like any wrong call)
  > `state_mismatch` (the verifier's state check failed)
  > `recovery_failure` (an execution error in the turn was never followed by a clean call of that tool)
  > `missing_tool_call` (the model made no call)
  > `response_mismatch` (state right, ground-truth outputs not covered).
A turn the episode never verified (it was cut first: its step budget or the context) is still labelled, as
the paper's released labelling does, so the weight sees it: `missing_tool_call` where the ground truth calls
tools, `correct_abstention` where it makes none (`spurious_tool_call` if the model had already called a
tool in that unfinished turn). Only a turn outside the task's ground truth gets no label (None) and is left
out of the weighting.

`OFFICIAL_ERROR_LABELS` says which labels each of bfcl-eval's error types may become (the tests hold the rules to it).

Not covered: the labels' weights and what they add up to (`seal_hub.diagnosis`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from seal_hub.diagnosis import Label, RolloutDiagnosis
from seal_hub.envs.bfcl.tasks import Task
from seal_hub.envs.protocol import ErrorKind

if TYPE_CHECKING:  # records are only read here; the rollout package sits above the suites
    from seal_hub.rollout.records import StepRecord, Trajectory, TurnRecord

# bfcl-eval's error type for a failing turn -> the labels our rules may give that turn.
OFFICIAL_ERROR_LABELS: dict[str, frozenset[Label]] = {
    "multi_turn:empty_turn_model_response": frozenset({Label.MISSING_TOOL_CALL, Label.INVALID_TOOL_CALL}),
    "multi_turn:instance_state_mismatch": frozenset(
        {Label.STATE_MISMATCH, Label.ARGUMENT_MISMATCH, Label.INSTANCE_MISMATCH, Label.INVALID_TOOL_CALL}
    ),
    "multi_turn:execution_response_mismatch": frozenset(
        {
            Label.RESPONSE_MISMATCH,
            Label.ARGUMENT_MISMATCH,
            Label.INSTANCE_MISMATCH,
            Label.RECOVERY_FAILURE,
            Label.INVALID_TOOL_CALL,
        }
    ),
    "multi_turn:irrelevance_error:decoder_success": frozenset({Label.SPURIOUS_TOOL_CALL}),
}

_EXECUTION_ERRORS = frozenset(
    {ErrorKind.TOOL_EXCEPTION, ErrorKind.TOOL_ERROR, ErrorKind.BAD_PATH, ErrorKind.NOT_AUTHENTICATED}
)
_SCHEMA_ERRORS = frozenset(k for k in ErrorKind if k.is_schema_violation)


def _arguments(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _canonical(call: tuple[str, object]) -> str:
    return json.dumps(call, sort_keys=True, default=str)


def _invalid(steps: Sequence[StepRecord]) -> bool:
    return any(
        step.parse_errors or any(r.error_kind in _SCHEMA_ERRORS and not r.executed for r in step.results)
        for step in steps
    ) or any(r.error_kind == ErrorKind.WRONG_TYPE for step in steps for r in step.results)


def _unrepaired_error(steps: Sequence[StepRecord]) -> bool:
    """An executed call ended in an execution error, and no later clean call of the same tool followed."""
    pending: set[str] = set()
    for step in steps:
        for call, result in zip(step.tool_calls, step.results, strict=False):
            if not result.executed:
                continue
            if result.error_kind in _EXECUTION_ERRORS:
                pending.add(call.name)
            elif result.error_kind is None:
                pending.discard(call.name)
    return bool(pending)


def unverified_label(steps: Sequence[StepRecord], truth: Sequence) -> Label:
    """The label of a turn the episode never verified (unreached or unfinished when it was cut)."""
    if truth:
        return Label.MISSING_TOOL_CALL
    called = any(step.tool_calls for step in steps)
    return Label.SPURIOUS_TOOL_CALL if called else Label.CORRECT_ABSTENTION


def label_turn(turn: TurnRecord, truth: Sequence) -> Label:
    """The label of one turn (see the module docstring); `truth` are its ground-truth ToolCalls."""
    verdict = turn.verdict
    if verdict is None:
        return unverified_label(turn.steps, truth)
    if not verdict.expects_calls:
        return Label.SPURIOUS_TOOL_CALL if verdict.model_calls > 0 else Label.CORRECT_ABSTENTION
    if verdict.passed:
        return Label.PASS
    if _invalid(turn.steps):
        return Label.INVALID_TOOL_CALL
    executed = [
        (call.name, _arguments(call.arguments))
        for step in turn.steps
        for call, result in zip(step.tool_calls, step.results, strict=False)
        if result.executed
    ]
    expected = [(call.name, call.arguments) for call in truth]
    same_tools = executed and Counter(n for n, _ in executed) == Counter(n for n, _ in expected)
    if same_tools and sorted(map(_canonical, executed)) != sorted(map(_canonical, expected)):
        return Label.ARGUMENT_MISMATCH
    if any("." not in difference for difference in verdict.state_differences):  # a whole instance differs
        return Label.INSTANCE_MISMATCH
    if verdict.error_type == "multi_turn:instance_state_mismatch":
        return Label.STATE_MISMATCH
    if _unrepaired_error(turn.steps):
        return Label.RECOVERY_FAILURE
    if verdict.model_calls == 0:
        return Label.MISSING_TOOL_CALL
    return Label.RESPONSE_MISMATCH


def diagnose_multi_turn(trajectory: Trajectory, task: Task) -> RolloutDiagnosis:
    """One label per user turn of the task, reached or not (turns the episode never reached: no steps)."""
    reached = {turn.index: turn for turn in trajectory.turns}
    labels: list[Label | None] = [
        label_turn(reached[index], truth) if index in reached else unverified_label((), truth)
        for index, truth in enumerate(task.ground_truth)
    ]
    labels += [None for index in sorted(reached) if index >= task.num_turns]  # no ground truth to judge by
    return RolloutDiagnosis(trajectory.task_id, trajectory.reward, tuple(labels))
