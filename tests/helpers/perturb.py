"""Deterministic perturbations of ground-truth trajectories, to compare our verifier with bfcl-eval's."""

from __future__ import annotations

import copy
import random

from seal_hub.envs.bfcl import Task, ground_truth_steps
from seal_hub.envs.protocol import ToolCall

KINDS = ("drop_call", "change_argument", "add_call", "call_on_empty_turn", "split_step")


def _changed(value, rng: random.Random):
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + rng.choice([1, -1, 7])
    if isinstance(value, float):
        return value + 1.5
    if isinstance(value, str):
        return rng.choice([value + "_x", value.upper() if value.upper() != value else value.lower() + "z", ""])
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    return None


def perturb(task: Task, kind: str, rng: random.Random):
    """A perturbed trajectory (turn -> steps -> calls), or None when `kind` does not apply to `task`."""
    steps = copy.deepcopy(ground_truth_steps(task))
    with_calls = [t for t, turn in enumerate(steps) if turn]
    empty = [t for t, turn in enumerate(steps) if not turn]
    all_calls = [call for turn in task.ground_truth for call in turn]
    if kind == "drop_call" and with_calls:
        turn = rng.choice(with_calls)
        calls = steps[turn][0]
        del calls[rng.randrange(len(calls))]
        steps[turn] = [calls] if calls else []
    elif kind == "change_argument":
        candidates = [(t, i) for t in with_calls for i, c in enumerate(steps[t][0]) if c.arguments]
        rng.shuffle(candidates)
        for turn, index in candidates:
            call = steps[turn][0][index]
            key = rng.choice(sorted(call.arguments))
            new = _changed(call.arguments[key], rng)
            if new is not None and new != call.arguments[key]:
                steps[turn][0][index] = ToolCall(call.name, {**call.arguments, key: new})
                break
        else:
            return None
    elif kind == "add_call" and with_calls:
        turn = rng.choice(with_calls)
        calls = steps[turn][0]
        calls.insert(rng.randrange(len(calls) + 1), rng.choice(all_calls))
    elif kind == "call_on_empty_turn" and empty and all_calls:
        turn = rng.choice(empty)
        later = [c for t in range(turn + 1, len(task.ground_truth)) for c in task.ground_truth[t]]
        steps[turn] = [[rng.choice(later or all_calls)]]
    elif kind == "split_step" and any(len(steps[t][0]) > 1 for t in with_calls):
        turn = rng.choice([t for t in with_calls if len(steps[t][0]) > 1])
        calls = steps[turn][0]
        cut = rng.randrange(1, len(calls))
        steps[turn] = [calls[:cut], calls[cut:]]
    else:
        return None
    return steps
