"""Diagnosis: one failure label per user turn, a rollout's failure profile and weight, a batch's profile.

`diagnose(trajectory, task, suite)` labels a rollout with its suite's rules (`TURN_LABELERS`, a plain dict by suite
name): BFCL multi-turn's below, BFCL single-turn's in `seal_hub.single_turn_labels` (the same labels and rho; the
ones that need execution cannot occur there). tau2-telecom and bfcl-memory have no turn labels: their verdicts
are one end-of-episode check, with no expected calls per turn to label turns by.

BFCL multi-turn: labels come from deterministic rules over the execution trace (each step's calls, parse errors
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

Rollout j with T_j labelled turns: p_j(z) is the share of its turns labelled z and
w_j = clip(sum_z p_j(z) * rho(z), 0.5, 2.0). A batch's `FailureProfile` gives, per label, the count of
turns, their prevalence among all labelled turns, and the mean reward over the label's turn occurrences (each
labelled turn contributes its rollout's reward, as the paper's released statistics do: a rollout with three
such turns counts three times).

Not covered: what to do with the profile (`seal_hub.evolve`), turn labels for tau2-telecom and bfcl-memory.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from datasets import Features, List, Value

from seal_hub.envs.bfcl import Task
from seal_hub.envs.protocol import ErrorKind

if TYPE_CHECKING:  # records are only read here; importing the rollout package would be circular
    from seal_hub.rollout.records import StepRecord, Trajectory, TurnRecord


class Label(StrEnum):
    SPURIOUS_TOOL_CALL = "spurious_tool_call"
    CORRECT_ABSTENTION = "correct_abstention"
    MISSING_TOOL_CALL = "missing_tool_call"
    INVALID_TOOL_CALL = "invalid_tool_call"
    ARGUMENT_MISMATCH = "argument_mismatch"
    RECOVERY_FAILURE = "recovery_failure"
    INSTANCE_MISMATCH = "instance_mismatch"
    STATE_MISMATCH = "state_mismatch"
    RESPONSE_MISMATCH = "response_mismatch"
    PASS = "pass"


# docs/method.md: the paper's released weights, and 1.0 where the paper's text is the only source.
DEFAULT_RHO: dict[Label, float] = {
    Label.SPURIOUS_TOOL_CALL: 2.0,
    Label.CORRECT_ABSTENTION: 1.8,
    Label.MISSING_TOOL_CALL: 1.5,
    Label.INVALID_TOOL_CALL: 1.0,
    Label.ARGUMENT_MISMATCH: 1.0,
    Label.RECOVERY_FAILURE: 1.0,
    Label.INSTANCE_MISMATCH: 0.6,
    Label.STATE_MISMATCH: 1.0,
    Label.RESPONSE_MISMATCH: 0.9,
    Label.PASS: 1.0,
}
FAILURE_LABELS = frozenset(set(Label) - {Label.PASS, Label.CORRECT_ABSTENTION})
WEIGHT_MIN, WEIGHT_MAX = 0.5, 2.0

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


@dataclass(frozen=True)
class RolloutDiagnosis:
    task_id: str
    reward: float
    labels: tuple[Label | None, ...]  # per user turn; None: no ground truth to judge by, left out

    @property
    def profile(self) -> dict[Label, float]:
        """p_j(z): the share of this rollout's labelled turns that carry each label."""
        counted = [label for label in self.labels if label is not None]
        return {label: n / len(counted) for label, n in Counter(counted).items()} if counted else {}

    def weight(self, rho: Mapping[Label, float] = DEFAULT_RHO) -> float:
        """w_j = clip(sum_z p_j(z) rho(z), 0.5, 2.0); 1.0 when no turn was labelled."""
        profile = self.profile
        if not profile:
            return 1.0
        return min(WEIGHT_MAX, max(WEIGHT_MIN, sum(share * rho[label] for label, share in profile.items())))


def diagnose_multi_turn(trajectory: Trajectory, task: Task) -> RolloutDiagnosis:
    """One label per user turn of the task, reached or not (turns the episode never reached: no steps)."""
    reached = {turn.index: turn for turn in trajectory.turns}
    labels: list[Label | None] = [
        label_turn(reached[index], truth) if index in reached else unverified_label((), truth)
        for index, truth in enumerate(task.ground_truth)
    ]
    labels += [None for index in sorted(reached) if index >= task.num_turns]  # no ground truth to judge by
    return RolloutDiagnosis(trajectory.task_id, trajectory.reward, tuple(labels))


def _single_turn(trajectory: Trajectory, task: Any) -> RolloutDiagnosis:
    from seal_hub.single_turn_labels import diagnose_answer  # it imports this module's labels

    return diagnose_answer(trajectory, task)


# suite name -> its labelling rules; a suite not here has no turn labels (and cannot train)
TURN_LABELERS: dict[str, Callable[[Trajectory, Any], RolloutDiagnosis]] = {
    "bfcl": diagnose_multi_turn,
    "bfcl-single": _single_turn,
}


class DiagnosisError(ValueError):
    """Turn labels asked for a suite that has none; the message names the suites that have them."""


def diagnose(trajectory: Trajectory, task: Any, suite: str = "bfcl") -> RolloutDiagnosis:
    """The rollout's labels by its suite's rules (`TURN_LABELERS`); `task` is the suite's task of the rollout."""
    labeler = TURN_LABELERS.get(suite)
    if labeler is None:
        raise DiagnosisError(f"suite {suite!r} has no turn labels; suites with them: {', '.join(TURN_LABELERS)}")
    return labeler(trajectory, task)


@dataclass(frozen=True)
class LabelStats:
    count: int  # turns carrying the label
    prevalence: float  # count / all labelled turns
    mean_reward: float  # mean over the label's turns of their rollout's reward (turn occurrences)


@dataclass(frozen=True)
class FailureProfile:
    """Per label: count, prevalence, mean reward, over a batch (or a window) of rollouts."""

    stats: dict[Label, LabelStats] = field(default_factory=dict)
    rollouts: int = 0
    turns: int = 0

    @classmethod
    def of(cls, diagnoses: Iterable[RolloutDiagnosis]) -> FailureProfile:
        diagnoses = list(diagnoses)
        counts: Counter[Label] = Counter()
        rewards: Counter[Label] = Counter()  # summed over turn occurrences
        for d in diagnoses:
            labels = [label for label in d.labels if label is not None]
            counts.update(labels)
            for label in labels:
                rewards[label] += d.reward
        turns = sum(counts.values())
        stats = {
            label: LabelStats(counts[label], counts[label] / turns, rewards[label] / counts[label])
            for label in Label
            if counts[label]
        }
        return cls(stats, len(diagnoses), turns)

    def get(self, label: Label) -> LabelStats:
        return self.stats.get(label, LabelStats(0, 0.0, 0.0))

    def to_dict(self) -> dict:
        return {
            "rollouts": self.rollouts,
            "turns": self.turns,
            "labels": {
                str(label): {"count": s.count, "prevalence": s.prevalence, "mean_reward": s.mean_reward}
                for label, s in self.stats.items()
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> FailureProfile:
        stats = {
            Label(name): LabelStats(int(v["count"]), float(v["prevalence"]), float(v["mean_reward"]))
            for name, v in data.get("labels", {}).items()
        }
        return cls(stats, int(data.get("rollouts", 0)), int(data.get("turns", 0)))


DIAGNOSIS_FEATURES = Features(
    {
        "task_id": Value("string"),
        "category": Value("string"),
        "rollout_index": Value("int32"),
        "interface_version": Value("string"),
        "reward": Value("float64"),
        "labels": List(Value("string")),  # per user turn of the task; null only where it has no ground truth
        "weight": Value("float64"),  # w_j under the rho table used
    }
)


def diagnosis_rows(
    trajectories: Sequence[Trajectory], diagnoses: Sequence[RolloutDiagnosis], rho: Mapping[Label, float] = DEFAULT_RHO
) -> list[dict]:
    """One row per rollout for the `diagnoses` configuration of a run's dataset (see `DIAGNOSIS_FEATURES`)."""
    return [
        {
            "task_id": t.task_id,
            "category": t.category,
            "rollout_index": t.rollout_index,
            "interface_version": t.interface_version,
            "reward": t.reward,
            "labels": [None if label is None else str(label) for label in d.labels],
            "weight": d.weight(rho),
        }
        for t, d in zip(trajectories, diagnoses, strict=True)
    ]
