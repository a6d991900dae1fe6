"""Per-turn verification by execution, with the semantics of bfcl-eval's `multi_turn_checker`.

For every user turn whose ground truth makes calls, bfcl-eval's checker asks, in this order:
1. did the model make any call this turn (else `multi_turn:empty_turn_model_response`);
2. does every API instance's public state equal the state after the ground-truth calls
   (else `multi_turn:instance_state_mismatch`; an instance present on one side only is a difference too, named
   by its class alone);
3. are this turn's ground-truth execution outputs all found, as a multiset, among *all* the model's outputs
   so far (else `multi_turn:execution_response_mismatch`).
Turns whose ground truth makes no call are not checked by bfcl-eval 2026.3.23 (its
`multi_turn_irrelevance_checker` exists but is not wired into `eval_runner`); `strict_abstention=True` applies
that checker's rule too (`multi_turn:irrelevance_error:decoder_success`). The reward is 1 only if every turn
passes. Unlike the official checker, which stops at the first failing turn, every turn gets a verdict (the
diagnosis labels every turn); the episode's verdict and first error type are the official ones.

The ground truth is deterministic, so its per-turn outputs and states are computed once per task
(`GroundTruthTrace`) and shared read-only by every rollout of that task; the official path re-executes the
ground truth at every check.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from seal_hub.envs.bfcl.execution import execute, instantiate
from seal_hub.envs.bfcl.tasks import Task
from seal_hub.envs.bfcl.tools import Tool, class_tools
from seal_hub.envs.protocol import TurnVerdict

EMPTY_TURN = "multi_turn:empty_turn_model_response"
STATE_MISMATCH = "multi_turn:instance_state_mismatch"
RESPONSE_MISMATCH = "multi_turn:execution_response_mismatch"
IRRELEVANCE = "multi_turn:irrelevance_error:decoder_success"
_MISSING = object()


def public_state(instance: Any) -> dict[str, Any]:
    """The attributes bfcl-eval compares: every instance attribute not starting with `_`."""
    return {key: value for key, value in vars(instance).items() if not key.startswith("_")}


@dataclass(frozen=True)
class TurnTruth:
    """The ground truth after one turn: its calls' outputs and a snapshot of every instance's public state."""

    outputs: tuple[str, ...]
    state: MappingProxyType[str, MappingProxyType[str, Any]]


@dataclass(frozen=True, eq=False)
class GroundTruthTrace:
    task_id: str
    turns: tuple[TurnTruth, ...]

    @classmethod
    def compute(cls, task: Task) -> GroundTruthTrace:
        """Execute the task's ground truth once on fresh instances, snapshotting each turn."""
        tools: dict[str, Tool] = {t.name: t for c in task.involved_classes for t in class_tools(c)}
        instances = instantiate(task)
        turns = []
        for calls in task.ground_truth:
            outputs = tuple(execute(instances, tools[call.name], call.arguments)[0] for call in calls)
            state = {
                name: MappingProxyType(copy.deepcopy(public_state(instance))) for name, instance in instances.items()
            }
            turns.append(TurnTruth(outputs, MappingProxyType(state)))
        return cls(task.id, tuple(turns))


def check_turn(
    turn: int,
    truth: TurnTruth,
    expects_calls: bool,
    instances: dict[str, Any],
    all_outputs: list[str],
    model_calls: int,
    strict_abstention: bool = False,
) -> TurnVerdict:
    """Verify one finished turn against its ground truth (see the module docstring for the order)."""
    if not expects_calls:
        if strict_abstention and model_calls > 0:
            return TurnVerdict(turn, False, model_calls, False, IRRELEVANCE)
        return TurnVerdict(turn, False, model_calls, True)
    if model_calls == 0:
        return TurnVerdict(turn, True, 0, False, EMPTY_TURN)
    differences = tuple(sorted(set(truth.state) ^ set(instances))) + tuple(  # a whole instance on one side only
        f"{class_name}.{attribute}"
        for class_name, truth_state in truth.state.items()
        if class_name in instances
        for attribute, value in truth_state.items()
        if getattr(instances[class_name], attribute, _MISSING) != value
    )
    if differences:
        return TurnVerdict(turn, True, model_calls, False, STATE_MISMATCH, state_differences=differences)
    available = Counter(all_outputs)
    missing = []
    for output in truth.outputs:
        if available[output] > 0:
            available[output] -= 1
        else:
            missing.append(output)
    if missing:
        return TurnVerdict(turn, True, model_calls, False, RESPONSE_MISMATCH, missing_outputs=tuple(missing))
    return TurnVerdict(turn, True, model_calls, True)
