"""One episode of a user environment: a fresh instance of the class, `reset(**row)`, tool calls until the model
answers without one or reaches the step limit, then `get_reward()`.

What the model sees is what TRL's `environment_factory` shows it: the row's prompt, with the text `reset` returns
appended to the last message; each call's return value as the tool's message. Every call into the class (making
the instance, reset, each tool, get_reward) goes through `seal_hub.envs.user.calls.run_limited`: a time limit,
prints captured (and dropped: TRL shows the return value only), results as text, cut when huge.

The model's mistakes are observations with the protocol's `ErrorKind`: unparseable text, an unknown tool, arguments
that do not bind to the method's signature (never run), a tool that raised (`TOOL_EXCEPTION`, the content
`Error: <ExceptionClass>: <message>`), a tool past the time limit (the same, as `TimeoutError`; the episode ends
there, because the abandoned call still holds the instance). The environment's own faults never crash a run: a
constructor or `reset` that fails ends the episode at the model's first step, unscored (`RESET_FAILED`, left out
of the labels); a `get_reward` that raises, hangs or returns NaN, a string or None scores 0 (`REWARD_INVALID`);
both say so in one line naming the class and the row (`UserSuite.warn`, once per row and fault).

One instance per episode, never shared: instance state is isolated between episodes. A class that keeps state at
module or class level shares that state between episodes, as it would under TRL; docs/environments.md says so.

Not covered: the labels (`seal_hub.envs.user.labels`), the verdict's reading of the reward (passed: reward > 0).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from seal_hub.envs.episode import EpisodeBase, parse_error_results
from seal_hub.envs.protocol import (
    Action,
    EpisodeVerdict,
    ErrorKind,
    Message,
    Observation,
    StepResult,
    ToolCall,
    ToolResult,
    TurnVerdict,
)
from seal_hub.envs.user.calls import CallOutcome, as_text, run_limited
from seal_hub.envs.user.dataset import UserTask
from seal_hub.envs.user.schema import bind

if TYPE_CHECKING:
    from seal_hub.envs.user.suite import UserSuite

RESET_FAILED = "user_env:reset_failed"  # the class or its reset failed: not the model's doing
REWARD_INVALID = "user_env:reward_invalid"  # get_reward raised, hung, or gave no number: scored 0
TOOL_HUNG = "user_env:tool_timeout"  # a tool ran past the time limit: the episode ended there
NO_REWARD = "user_env:no_reward"  # get_reward gave 0


@dataclass(frozen=True)
class UserVerdict(EpisodeVerdict):
    """The episode's one turn and the reward `get_reward` gave (not only 0 or 1); passed when it is above 0."""

    score: float = 0.0

    @property
    def passed(self) -> bool:
        return self.score > 0 and not self.force_terminated

    @property
    def reward(self) -> float:
        return self.score


def _reward_value(value: Any) -> float | None:
    """A finite number (bools and numpy scalars included), else None."""
    if isinstance(value, numbers.Real) and math.isfinite(float(value)):
        return float(value)
    return None


class UserEpisode(EpisodeBase):
    """One task of a `UserSuite` on its own instance of the class (module docstring)."""

    def __init__(self, suite: UserSuite, task: UserTask, config: Any = None) -> None:
        super().__init__(task)
        self.suite = suite
        self.max_steps = getattr(config, "max_steps_per_turn", None) or 20
        episode_cap = getattr(config, "max_steps_per_episode", None)
        if episode_cap:
            self.max_steps = min(self.max_steps, episode_cap)
        self._instance: Any = None
        self._steps = 0
        self._calls = 0
        self._done = False
        self._fault: str | None = None  # RESET_FAILED, TOOL_HUNG or REWARD_INVALID
        self._score: float | None = None

    # ----- calls into the user's class -----

    def _call(self, function: Any, kwargs: dict[str, Any]) -> CallOutcome:
        return run_limited(function, kwargs, self.suite.spec.call_timeout_s)

    def _where(self) -> str:
        return f"environment class {self.suite.class_name}, row {self.task.index} (task {self.task.id})"

    def _start(self) -> Observation:
        self._steps = self._calls = 0
        self._done, self._fault, self._score = False, None, None
        messages = list(self.task.messages)
        made = self._call(self.suite.environment_class, {})
        outcome = self._call(made.value.reset, dict(self.task.row)) if made.ok else made
        if not outcome.ok:
            what = "__init__" if not made.ok else "reset"
            why = (
                f"ran past {self.suite.spec.call_timeout_s:g} s" if outcome.timed_out else f"raised {_error(outcome)}"
            )
            self.suite.warn((RESET_FAILED, self.task.id), f"{self._where()}: {what} {why}; episode not scored")
            self._fault = RESET_FAILED
        else:
            self._instance = made.value
            added = outcome.value
            if added is not None and messages:  # TRL: appended to the last message of the prompt
                last = messages[-1]
                text = added if isinstance(added, str) else as_text(added, self.suite.spec.max_result_chars)
                messages[-1] = Message(last.role, last.content + text)
        return Observation(0, messages=tuple(messages), tools=self.suite.tool_schemas)

    def _tool_result(self, call: ToolCall) -> ToolResult:
        spec = self.suite.tools.get(call.name)
        if spec is None:
            names = ", ".join(self.suite.tools)
            return ToolResult(
                call, f"Error: no tool named {call.name!r}; the tools are: {names}", ErrorKind.UNKNOWN_TOOL
            )
        kwargs, kind, message = bind(spec, call.arguments)
        if kind is not None:
            return ToolResult(call, f"Error: {message}", kind)
        outcome = self._call(getattr(self._instance, call.name), kwargs or {})
        if outcome.timed_out:
            self._fault = TOOL_HUNG
            limit = self.suite.spec.call_timeout_s
            content = f"Error: TimeoutError: {call.name} did not return within {limit:g} s"
            return ToolResult(call, content, ErrorKind.TOOL_EXCEPTION, executed=True)
        if outcome.error is not None:
            content = self.suite.truncate(f"Error: {_error(outcome)}")
            return ToolResult(call, content, ErrorKind.TOOL_EXCEPTION, executed=True)
        return ToolResult(call, as_text(outcome.value, self.suite.spec.max_result_chars), executed=True)

    def _step(self, action: Action) -> StepResult:
        self._steps += 1
        if self._fault == RESET_FAILED:  # nothing to run against: ended, unscored
            self._done, self._score = True, 0.0
            return StepResult(Observation(0, tools=self.suite.tool_schemas), done=True, reward=0.0)
        if not action.tool_calls and not action.parse_errors:  # an answer without a call ends the episode
            return self._finish(truncated=False)
        results = list(parse_error_results(action))
        for call in action.tool_calls:
            self._calls += 1
            results.append(self._tool_result(call))
            if self._fault == TOOL_HUNG:
                break  # the hung call still holds the instance: nothing more runs on it
        observation = Observation(0, tool_results=tuple(results), tools=self.suite.tool_schemas)
        if self._fault == TOOL_HUNG:
            self._done, self._score = True, 0.0
            self.suite.warn((TOOL_HUNG, self.task.id), f"{self._where()}: a tool call ran past the time limit")
            return StepResult(observation, done=True, reward=0.0)
        if self._steps >= self.max_steps:
            return self._finish(truncated=True, observation=observation)
        return StepResult(observation)

    def _finish(self, truncated: bool, observation: Observation | None = None) -> StepResult:
        self._done = True
        self._score = self._reward()
        observation = observation or Observation(0, tools=self.suite.tool_schemas)
        return StepResult(observation, done=True, truncated=truncated, reward=self._score)

    def _reward(self) -> float:
        """`get_reward()` as a float; a fault scores 0 and says so once (module docstring)."""
        outcome = self._call(self._instance.get_reward, {})
        if outcome.ok and (value := _reward_value(outcome.value)) is not None:
            return value
        if outcome.timed_out:
            why = f"ran past {self.suite.spec.call_timeout_s:g} s"
        elif outcome.error is not None:
            why = f"raised {_error(outcome)}"
        else:
            why = f"returned {as_text(repr(outcome.value), 60)} (not a finite number)"
        self.suite.warn((REWARD_INVALID, self.task.id), f"{self._where()}: get_reward {why}; reward 0")
        self._fault = REWARD_INVALID
        return 0.0

    def _release(self) -> None:
        if self._started and not self._done and self._fault is None and self._instance is not None:
            self._done = True  # ended from outside (the context limit): scored as TRL scores every rollout
            self._score = self._reward()
        self._instance = None

    # ----- what the loop reads -----

    @property
    def done(self) -> bool:
        return self._done

    @property
    def tools(self) -> tuple[dict[str, Any], ...]:
        return self.suite.tool_schemas

    @property
    def verdict(self) -> UserVerdict:
        score = self._score or 0.0
        if not self._done:
            return UserVerdict((), 1, score=0.0)
        error = self._fault or (NO_REWARD if score <= 0 else None)
        turn = TurnVerdict(0, self.task.expects_call, self._calls, score > 0, error)
        return UserVerdict((turn,), 1, score=score)


def _error(outcome: CallOutcome) -> str:
    """'ExceptionClass: message' of a call that raised, in one line."""
    message = " ".join(str(outcome.error).split())
    return f"{outcome.error_class}: {message}" if message else outcome.error_class
