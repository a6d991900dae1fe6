"""Turn labels for a user environment, from what the protocol sees: no task-specific checker.

A user environment's episode is one turn, labelled with the labels of `seal_hub.diagnosis` so rollout weights,
the failure profile, interface evolution and the rho update work on it unchanged. The first rule that applies:

- the class or its `reset` failed (`RESET_FAILED`) or a reward source failed or none scored it (`REWARD_INVALID`):
  no label
  (None: the environment's fault, nothing to judge the model by; left out of the profile);
- the row says no call belongs (`expects_call` false): `spurious_tool_call` if the model made one, else
  `correct_abstention`;
- the turn passed (the reward at least the success threshold; without a verdict, a reward above 0): `pass`;
- text that looked like a call but did not parse, an unknown tool, or arguments that do not bind to the method's
  signature (not an object, a missing required argument, one it does not take): `invalid_tool_call`;
- a tool raised (any exception class; a call past the time limit counts as `TimeoutError`): `recovery_failure`;
- no call at all: `missing_tool_call`;
- calls that all ran, and the reward stayed 0: `argument_mismatch` (without a checker, the nearest paper label:
  the calls did not do what the task needed).

`instance_mismatch`, `state_mismatch` and `response_mismatch` need a ground truth to compare with, so they never
occur here. `raised_classes` reads the exception classes the tools raised back from the records (the episode
writes `Error: <ExceptionClass>: ...`), for the recovery hints keyed by them.

Not covered: the labels' weights (`seal_hub.diagnosis.labels.DEFAULT_RHO`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from seal_hub.diagnosis import Label, RolloutDiagnosis
from seal_hub.envs.protocol import ErrorKind
from seal_hub.envs.user.dataset import UserTask
from seal_hub.envs.user.episode import RESET_FAILED, REWARD_INVALID

if TYPE_CHECKING:
    from seal_hub.rollout.records import Trajectory, TurnRecord

INVALID_KINDS = frozenset(
    str(kind)
    for kind in (
        ErrorKind.PARSE_ERROR,
        ErrorKind.UNKNOWN_TOOL,
        ErrorKind.ARGUMENTS_NOT_OBJECT,
        ErrorKind.MISSING_ARGUMENT,
        ErrorKind.UNEXPECTED_ARGUMENT,
    )
)
_RAISED = re.compile(r"^Error: ([A-Za-z_][\w.]*)(?::|$)")


def label_turn(turn: TurnRecord | None, reward: float, task: UserTask) -> Label | None:
    """The label of the episode's one turn (module docstring); `turn` None: it never got a step."""
    steps = turn.steps if turn is not None else []
    verdict = turn.verdict if turn is not None else None
    if verdict is not None and verdict.error_type in (RESET_FAILED, REWARD_INVALID):
        return None
    calls = [call for step in steps for call in step.tool_calls]
    parse_errors = [error for step in steps for error in step.parse_errors]
    if not task.expects_call:
        return Label.SPURIOUS_TOOL_CALL if calls or parse_errors else Label.CORRECT_ABSTENTION
    if verdict.passed if verdict is not None else reward > 0:
        return Label.PASS
    kinds = {str(result.error_kind) for step in steps for result in step.results if result.error_kind}
    if parse_errors or kinds & INVALID_KINDS:
        return Label.INVALID_TOOL_CALL
    if str(ErrorKind.TOOL_EXCEPTION) in kinds:
        return Label.RECOVERY_FAILURE
    if not calls:
        return Label.MISSING_TOOL_CALL
    return Label.ARGUMENT_MISMATCH


def diagnose(trajectory: Trajectory, task: UserTask) -> RolloutDiagnosis:
    """The rollout's one label."""
    turn = next((t for t in trajectory.turns if t.index == 0), None)
    return RolloutDiagnosis(trajectory.task_id, trajectory.reward, (label_turn(turn, trajectory.reward, task),))


def raised_classes(trajectories: Iterable[Trajectory]) -> Counter[str]:
    """How often each exception class was raised by a tool over `trajectories`."""
    found: Counter[str] = Counter()
    for trajectory in trajectories:
        for turn in trajectory.turns:
            for step in turn.steps:
                for result in step.results:
                    if str(result.error_kind) == str(ErrorKind.TOOL_EXCEPTION):
                        match = _RAISED.match(result.content)
                        if match:
                            found[match.group(1)] += 1
    return found
