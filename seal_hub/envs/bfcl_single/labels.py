"""Turn labels for BFCL single-turn (`bfcl-single`): one answer per question, checked and never executed.

Same labels and rho as the multi-turn suite (`seal_hub.diagnosis`; its rules: `seal_hub.envs.bfcl.labels`);
deterministic rules over the one answer (its parsed calls and parse errors, from the trajectory), the offered
function docs and the answer key (from the task), and the checker's verdict. The first rule that applies:

- irrelevance categories (no call belongs): `correct_abstention` when the verdict passed (nothing decoded to a
  call), else `spurious_tool_call`;
- the verdict passed: `pass`;
- no answer was checked (the episode was cut before the model answered): `missing_tool_call`;
- text that looked like a call but did not parse, or a call whose arguments are not a JSON object:
  `invalid_tool_call`;
- no call at all: `missing_tool_call`;
- a call that does not fit the offered schema, as the multi-turn suite refuses it before executing: an unknown
  function, a missing required argument, an argument the function does not declare, an ill-typed or oversized
  value (`seal_hub.envs.bfcl.tools`, BFCL's types; a value the answer key accepts counts as well-typed):
  `invalid_tool_call`;
- the calls name the same functions as the answer key (as many of each): `argument_mismatch` (a value the key
  does not accept, an optional argument the key needs left out, or one it forbids given);
- fewer calls than the key, all of functions the key calls (a parallel call left out): `missing_tool_call`;
- otherwise (a schema-valid call of another offered function than the key's, or calls beyond the key's):
  `argument_mismatch`, the answer's calls do not match the key's.

Labels that cannot occur here, because nothing executes: `recovery_failure` (no tool errors to recover from),
`instance_mismatch`, `state_mismatch` and `response_mismatch` (no state and no tool outputs). Where the multi-turn
labels separate "the right tools with other values" from "other tools", a single answer has no execution to tell
the two apart, so both are `argument_mismatch`. live_relevance has no key: any decoded call passes there, so its
failures are `invalid_tool_call` or `missing_tool_call`.

Not covered: BFCL's own error types (they stay on the verdict, `TurnVerdict.error_type`).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING

from seal_hub.diagnosis import Label, RolloutDiagnosis
from seal_hub.envs.arguments import decode_arguments
from seal_hub.envs.bfcl.tools import Tool, type_problem, validate_arguments
from seal_hub.envs.bfcl_single.tasks import SingleTask

if TYPE_CHECKING:
    from seal_hub.rollout.records import CallRecord, Trajectory, TurnRecord


def _arguments(call: CallRecord) -> dict | None:
    """The call's arguments as the checker decodes them (a JSON string is decoded), or None if not an object."""
    try:
        given = json.loads(call.arguments)
    except ValueError:
        return None
    arguments, _ = decode_arguments(given)
    return arguments


def _accepted(task: SingleTask) -> dict[tuple[str, str], list]:
    """(function, argument) -> the values the answer key accepts for it (over all of the key's calls)."""
    accepted: dict[tuple[str, str], list] = {}
    for key in task.possible_answer or ():
        for name, arguments in key.items():
            for argument, values in arguments.items():
                accepted.setdefault((name, argument), []).extend(values if isinstance(values, list) else [values])
    return accepted


def _fits_schema(call: CallRecord, docs: dict[str, dict], accepted: dict[tuple[str, str], list]) -> bool:
    """Whether the call names an offered function and fits its schema; a value the answer key accepts is never
    ill-typed (a few live keys accept, e.g., a boolean for a string argument, and BFCL's checker with them)."""
    arguments = _arguments(call)
    if arguments is None or call.name not in docs:
        return False
    tool = Tool(call.name, "", docs[call.name], {})
    typed = {k: v for k, v in arguments.items() if v not in accepted.get((call.name, k), ())}
    return validate_arguments(tool, arguments) is None and type_problem(tool, typed) is None


def label_answer(turn: TurnRecord | None, task: SingleTask) -> Label:
    """The label of a single-turn episode's one turn (module docstring); `turn` None: cut before it answered."""
    verdict = turn.verdict if turn is not None else None
    steps = turn.steps if turn is not None else []
    calls = [call for step in steps for call in step.tool_calls]
    if not task.expects_calls:
        if verdict is None:
            return Label.SPURIOUS_TOOL_CALL if calls else Label.CORRECT_ABSTENTION
        return Label.CORRECT_ABSTENTION if verdict.passed else Label.SPURIOUS_TOOL_CALL
    if verdict is None:
        return Label.MISSING_TOOL_CALL
    if verdict.passed:
        return Label.PASS
    if any(step.parse_errors for step in steps) or any(_arguments(call) is None for call in calls):
        return Label.INVALID_TOOL_CALL
    if not calls:
        return Label.MISSING_TOOL_CALL
    docs = {str(doc.get("name")): dict(doc) for doc in task.functions}
    accepted = _accepted(task)
    if not all(_fits_schema(call, docs, accepted) for call in calls) or task.possible_answer is None:
        return Label.INVALID_TOOL_CALL
    expected = Counter(name for key in task.possible_answer for name in key)
    made = Counter(call.name for call in calls)
    if made != expected and made.total() < expected.total() and not made - expected:
        return Label.MISSING_TOOL_CALL
    return Label.ARGUMENT_MISMATCH


def diagnose_answer(trajectory: Trajectory, task: SingleTask) -> RolloutDiagnosis:
    """The rollout's one label (its first turn; a single-turn episode has no other)."""
    turn = next((t for t in trajectory.turns if t.index == 0), None)
    return RolloutDiagnosis(trajectory.task_id, trajectory.reward, (label_answer(turn, task),))
