"""The trajectory record: one rollout, everything the trainer, the diagnosis and the Hub dataset need.

A `Trajectory` holds the conversation (chat messages), what happened turn by turn (each model step's text,
parsed calls, parse errors and tool results; each turn's verdict), the reward, and the token-level view the
trainer consumes: every token of the episode, a mask (1: sampled by the policy, 0: prompt, tool output or
user text) and the sampled tokens' log-probabilities. Provenance: policy id and revision, the environment
environment version, the seed and the rollout's index in its group.

`FEATURES` is the same schema as `datasets.Features`; `write_trajectories` / `read_trajectories` store a list
of them as Parquet and read it back identically (floats are float64 so nothing is rounded). Tool-call
arguments are stored as JSON text, since their shape differs from tool to tool.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from datasets import Dataset, Features, List, Value
from pydantic import BaseModel, ConfigDict

from seal_hub.atomic import write_with


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CallRecord(_Record):
    name: str
    arguments: str  # JSON text of whatever the model gave

    @classmethod
    def of(cls, call) -> CallRecord:
        return cls(name=str(call.name), arguments=json.dumps(call.arguments, ensure_ascii=False, default=str))


class ParseErrorRecord(_Record):
    kind: str
    message: str


class ResultRecord(_Record):
    content: str
    error_kind: str | None = None
    executed: bool = False
    note: str | None = None


class StepRecord(_Record):
    text: str  # the model's decoded output for this step
    tool_calls: list[CallRecord] = []
    parse_errors: list[ParseErrorRecord] = []
    results: list[ResultRecord] = []
    num_tokens: int = 0
    finished: bool = True  # ended on an end-of-turn token (False: cut by the token limit)

    @classmethod
    def of(cls, action, results, text: str | None = None, **extra) -> StepRecord:
        """The record of one step: the model's `action` (its text unless `text` is given; its calls and parse
        errors) and the episode's tool `results` for it; `extra` sets `num_tokens` / `finished`."""
        return cls(
            text=action.content if text is None else text,
            tool_calls=[CallRecord.of(c) for c in action.tool_calls],
            parse_errors=[ParseErrorRecord(kind=e.kind, message=e.message) for e in action.parse_errors],
            results=[
                ResultRecord(content=r.content, error_kind=r.error_kind, executed=r.executed, note=r.note)
                for r in results
            ],
            **extra,
        )


class VerdictRecord(_Record):
    passed: bool
    expects_calls: bool
    model_calls: int
    error_type: str | None = None
    state_differences: list[str] = []
    missing_outputs: list[str] = []

    @classmethod
    def of(cls, verdict) -> VerdictRecord:
        """The record of a verifier's `TurnVerdict`."""
        return cls(
            passed=verdict.passed,
            expects_calls=verdict.expects_calls,
            model_calls=verdict.model_calls,
            error_type=verdict.error_type,
            state_differences=list(verdict.state_differences),
            missing_outputs=list(verdict.missing_outputs),
        )


class TurnRecord(_Record):
    index: int
    steps: list[StepRecord] = []
    verdict: VerdictRecord | None = None  # None: the episode ended before this turn was verified


class MessageRecord(_Record):
    role: str
    content: str
    tool_calls: list[CallRecord] = []


class Trajectory(_Record):
    task_id: str
    category: str
    rollout_index: int
    seed: int
    policy_id: str
    policy_revision: str | None = None
    interface_version: str
    messages: list[MessageRecord]
    turns: list[TurnRecord]
    reward: float
    passed: bool
    error_type: str | None = None
    truncated: bool = False
    truncation: str | None = None  # "step_limit" | "context_limit"
    prompt_length: int  # tokens of the first prompt (system, tools, first user turn)
    token_ids: list[int]
    token_mask: list[int]  # 1 where the policy sampled the token
    logprobs: list[float]  # the sampled token's log-probability where mask is 1, else 0.0
    num_steps: int
    num_generated_tokens: int
    generation_seconds: float
    environment_seconds: float
    total_seconds: float


_CALL = {"name": Value("string"), "arguments": Value("string")}
_VERDICT = {
    "passed": Value("bool"),
    "expects_calls": Value("bool"),
    "model_calls": Value("int32"),
    "error_type": Value("string"),
    "state_differences": List(Value("string")),
    "missing_outputs": List(Value("string")),
}
_STEP = {
    "text": Value("string"),
    "tool_calls": List(_CALL),
    "parse_errors": List({"kind": Value("string"), "message": Value("string")}),
    "results": List(
        {"content": Value("string"), "error_kind": Value("string"), "executed": Value("bool"), "note": Value("string")}
    ),
    "num_tokens": Value("int32"),
    "finished": Value("bool"),
}
FEATURES = Features(
    {
        "task_id": Value("string"),
        "category": Value("string"),
        "rollout_index": Value("int32"),
        "seed": Value("int64"),
        "policy_id": Value("string"),
        "policy_revision": Value("string"),
        "interface_version": Value("string"),
        "messages": List({"role": Value("string"), "content": Value("string"), "tool_calls": List(_CALL)}),
        "turns": List({"index": Value("int32"), "steps": List(_STEP), "verdict": _VERDICT}),
        "reward": Value("float64"),
        "passed": Value("bool"),
        "error_type": Value("string"),
        "truncated": Value("bool"),
        "truncation": Value("string"),
        "prompt_length": Value("int32"),
        "token_ids": List(Value("int32")),
        "token_mask": List(Value("int8")),
        "logprobs": List(Value("float64")),
        "num_steps": Value("int32"),
        "num_generated_tokens": Value("int32"),
        "generation_seconds": Value("float64"),
        "environment_seconds": Value("float64"),
        "total_seconds": Value("float64"),
    }
)


def to_dataset(trajectories: list[Trajectory]) -> Dataset:
    return Dataset.from_list([t.model_dump() for t in trajectories], features=FEATURES)


def from_rows(rows: list[dict[str, Any]]) -> list[Trajectory]:
    return [Trajectory.model_validate(row) for row in rows]


def write_trajectories(trajectories: list[Trajectory], path: str | Path) -> Path:
    """Write to Parquet atomically (a temporary file renamed into place): a crash leaves no half file."""
    rows = to_dataset(trajectories)
    return write_with(path, lambda temp: rows.to_parquet(str(temp)))


def read_trajectories(path: str | Path) -> list[Trajectory]:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no trajectory file at {path}")
    try:
        rows = pq.read_table(path).to_pylist()
    except (OSError, ValueError) as exc:  # pyarrow raises ArrowInvalid (a ValueError) on a corrupt file
        raise ValueError(f"{path} is not a readable trajectory Parquet file: {exc}") from None
    return from_rows(rows)
