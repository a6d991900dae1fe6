"""Bridge to bfcl-eval's own multi-turn pipeline, to check our verifier against it and to benchmark both.

bfcl-eval executes calls written as Python strings by `eval` against instances it keeps in the globals of
`multi_turn_utils`, keyed by model name and task id. `official_check` runs its `multi_turn_checker` (and,
for strict abstention, `multi_turn_irrelevance_checker`) under a unique model name and removes the instances
it created afterwards, so repeated checks neither see each other's state nor grow memory. Calls are turned
into BFCL's strings with bfcl-eval's own `convert_to_function_call`.

This module runs trusted strings only (our structured calls re-rendered by bfcl-eval); it is for
verification and benchmarks, never for executing model output during training.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from functools import cache
from types import SimpleNamespace
from typing import Any

from seal_hub.envs.bfcl.extra import require_bfcl_eval
from seal_hub.envs.bfcl.tasks import Task
from seal_hub.envs.protocol import ToolCall

Steps = Sequence[Sequence[Sequence[ToolCall]]]  # turn -> step -> calls


@cache
def _bfcl() -> SimpleNamespace:
    """bfcl-eval's checker, executor and call renderer, imported on first use (this module imports without it)."""
    require_bfcl_eval()
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import (
        multi_turn_checker,
        multi_turn_irrelevance_checker,
    )
    from bfcl_eval.model_handler.utils import convert_to_function_call

    return SimpleNamespace(
        utils=multi_turn_utils,
        checker=multi_turn_checker,
        irrelevance_checker=multi_turn_irrelevance_checker,
        to_call_strings=convert_to_function_call,
    )


_counter = itertools.count()


def to_bfcl_strings(calls: Sequence[ToolCall]) -> list[str]:
    """Structured calls as the Python call strings bfcl-eval executes."""
    return _bfcl().to_call_strings([{call.name: dict(call.arguments)} for call in calls])


def release_instances(model_name: str) -> int:
    """Drop the instances bfcl-eval keeps in module globals for `model_name`; returns how many."""
    prefix = re.sub(r"[-./:]", "_", model_name)
    store = vars(_bfcl().utils)
    names = [key for key in store if key.startswith(prefix) and key.endswith("_instance")]
    for key in names:
        del store[key]
    return len(names)


def official_check(task: Task, steps: Steps, strict_abstention: bool = False, release: bool = True) -> dict[str, Any]:
    """bfcl-eval's verdict for a model trajectory given as per-turn steps of structured calls."""
    decoded = [[to_bfcl_strings(step) for step in turn if step] for turn in steps]
    ground_truth = [list(turn) for turn in task.ground_truth_source]
    model_name = f"sealhub_check_{next(_counter)}"
    try:
        if len(decoded) != len(ground_truth):
            return {"valid": False, "error_type": "multi_turn:force_terminated"}
        result = _bfcl().checker(decoded, ground_truth, task.raw_entry(), task.category, model_name)
        if result["valid"] and strict_abstention:
            result = _bfcl().irrelevance_checker(decoded, ground_truth)
        return result
    finally:
        if release:
            release_instances(model_name)


def official_replay(task: Task, steps: Steps, model_name: str) -> dict[str, Any]:
    """bfcl-eval's whole path for one trajectory: execute each step as its inference loop does, then check.

    Leaves bfcl-eval's instances in its module globals, as bfcl-eval does (the benchmark measures that).
    """
    for turn in steps:
        for step in turn:
            if step:
                _bfcl().utils.execute_multi_turn_func_call(
                    to_bfcl_strings(step),
                    task.raw_entry()["initial_config"],
                    list(task.involved_classes),
                    model_name,
                    task.id,
                    long_context=task.long_context,
                    is_evaL_run=False,
                )
    decoded = [[to_bfcl_strings(step) for step in turn if step] for turn in steps]
    return _bfcl().checker(
        decoded, [list(t) for t in task.ground_truth_source], task.raw_entry(), task.category, model_name
    )
