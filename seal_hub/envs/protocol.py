"""The step protocol between an agent and an executable tool environment.

Typed records only, no behaviour: what the agent sends (`Action`: its text and the tool calls parsed from
it), what it gets back (`Observation`: tool results, the next user turn, the tools visible now) and what the
training loop reads at the end (`StepResult.done`, the reward). The shape follows OpenEnv's
`reset() -> observation` / `step(action) -> (observation, reward, done)` and the message dicts that Hugging
Face chat templates take, so a rollout engine can feed observations straight into `apply_chat_template`.

Errors the *model* makes (a bad call, unknown tool, a tool that raises) never raise here: they come back as
`ToolResult`s with an `ErrorKind`, which the diagnosis turns into labels. Errors of the *caller* (stepping a
finished episode) raise `EpisodeError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class ErrorKind(StrEnum):
    """Why a tool call did not execute cleanly; the diagnosis maps these to turn labels."""

    PARSE_ERROR = "parse_error"  # the model's text held a call that could not be parsed
    UNKNOWN_TOOL = "unknown_tool"  # no tool of that name exists in the task
    WITHHELD_TOOL = "withheld_tool"  # the tool exists but is only revealed at a later turn (miss_func)
    EXCLUDED_TOOL = "excluded_tool"  # the tool's class is involved but the task excludes this function
    ARGUMENTS_NOT_OBJECT = "arguments_not_object"  # arguments are not a JSON object
    MISSING_ARGUMENT = "missing_argument"
    UNEXPECTED_ARGUMENT = "unexpected_argument"
    WRONG_TYPE = "wrong_type"
    ARGUMENT_TOO_LARGE = "argument_too_large"
    TOOL_EXCEPTION = "tool_exception"  # the tool raised while executing
    TOOL_ERROR = "tool_error"  # the tool ran and returned an error payload
    BAD_PATH = "bad_path"  # a tool error about a missing file, folder or path
    NOT_AUTHENTICATED = "not_authenticated"  # a tool error about a missing login or authentication

    @property
    def is_schema_violation(self) -> bool:
        """Rejected before execution because the call does not fit the visible tool schema."""
        return self in _SCHEMA_VIOLATIONS


_SCHEMA_VIOLATIONS = frozenset(
    {
        ErrorKind.PARSE_ERROR,
        ErrorKind.UNKNOWN_TOOL,
        ErrorKind.WITHHELD_TOOL,
        ErrorKind.EXCLUDED_TOOL,
        ErrorKind.ARGUMENTS_NOT_OBJECT,
        ErrorKind.MISSING_ARGUMENT,
        ErrorKind.UNEXPECTED_ARGUMENT,
        ErrorKind.WRONG_TYPE,
        ErrorKind.ARGUMENT_TOO_LARGE,
    }
)


@dataclass(frozen=True)
class ToolCall:
    """One structured call: a tool name and its arguments.

    `arguments` is whatever the model produced: normally a dict; a JSON string is decoded by the
    environment; anything else is answered with an `ARGUMENTS_NOT_OBJECT` observation.
    """

    name: str
    arguments: Any = field(default_factory=dict)
    id: str | None = None

    def to_chat(self) -> dict[str, Any]:
        """The OpenAI/HF chat-template form of the call."""
        call: dict[str, Any] = {"type": "function", "function": {"name": self.name, "arguments": self.arguments}}
        if self.id is not None:
            call["id"] = self.id
        return call


@dataclass(frozen=True)
class ParseError:
    """A span of model text that looked like a tool call but could not be turned into one."""

    kind: str
    message: str
    text: str = ""


@dataclass(frozen=True)
class Action:
    """What the agent does in one step: its raw text, the calls parsed from it, and what failed to parse.

    An action with no tool calls (and no parse errors) is a final message: it ends the user turn.
    """

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    parse_errors: tuple[ParseError, ...] = ()


@dataclass(frozen=True)
class ToolResult:
    """The observation for one call (None: text that did not parse): what the agent sees and, on failure, why."""

    call: ToolCall | None
    content: str
    error_kind: ErrorKind | None = None
    executed: bool = False  # the call reached the tool (a raised exception counts as executed)
    note: str | None = None  # what was wrong with a call that executed anyway (an ill-typed argument)

    def to_chat(self) -> dict[str, Any]:
        if self.call is None:
            return {"role": "tool", "content": self.content}
        message: dict[str, Any] = {"role": "tool", "name": self.call.name, "content": self.content}
        if self.call.id is not None:
            message["tool_call_id"] = self.call.id
        return message


@dataclass(frozen=True)
class Message:
    """A chat message the environment adds to the conversation (user turns, notes)."""

    role: str
    content: str

    def to_chat(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class Observation:
    """What the agent receives after reset or a step."""

    turn_index: int
    messages: tuple[Message, ...] = ()  # a new user turn, when one starts
    tool_results: tuple[ToolResult, ...] = ()  # results of the calls of the last step
    tools: tuple[dict[str, Any], ...] = ()  # JSON-schema tools visible now (chat-template format)
    tools_changed: bool = False  # new tools were revealed with this observation


@dataclass(frozen=True)
class StepResult:
    observation: Observation
    done: bool = False
    truncated: bool = False  # ended by a limit (steps per turn), not by the conversation finishing
    reward: float | None = None  # set when done


FORCE_TERMINATED = "multi_turn:force_terminated"  # BFCL's error type of an episode cut by a limit


@dataclass(frozen=True)
class TurnVerdict:
    turn: int
    expects_calls: bool
    model_calls: int  # structured calls the model attempted this turn (unparseable text not counted)
    passed: bool
    error_type: str | None = None
    state_differences: tuple[str, ...] = ()  # "Class.attribute" that differ; "Class": instance on one side only
    missing_outputs: tuple[str, ...] = ()  # ground-truth outputs the model's outputs do not cover


@dataclass(frozen=True)
class EpisodeVerdict:
    turns: tuple[TurnVerdict, ...]
    num_turns: int
    force_terminated: bool = False

    @property
    def passed(self) -> bool:
        return not self.force_terminated and len(self.turns) == self.num_turns and all(t.passed for t in self.turns)

    @property
    def reward(self) -> float:
        return 1.0 if self.passed else 0.0

    @property
    def error_type(self) -> str | None:
        """The error type bfcl-eval reports for this episode (its first failing turn), None if it passes."""
        if self.force_terminated:
            return FORCE_TERMINATED
        failed = next((t for t in self.turns if not t.passed), None)
        return failed.error_type if failed else None


class EpisodeError(RuntimeError):
    """The caller misused an episode (stepped it after it finished, or after close)."""
