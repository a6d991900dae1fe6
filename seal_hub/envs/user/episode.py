"""One episode of a user environment: a fresh instance from its factory, `reset(**row)`, tool calls until the model
answers without one or reaches the step limit, then the reward (`seal_hub.envs.user.rewards`: the reward functions
and `get_reward`, as TRL sums them).

The task's environment is the setup's one factory, or the one its row's `environment` column names (a dict of
factories; that column is not passed to `reset`); a setup of plain `tools=` has no instance and no `reset`. A
dataset-free task resets with Python's `random` (and numpy's, when loaded) seeded from its seed, their states put
back after. What the model sees is what TRL's `environment_factory` shows it: the row's prompt, with the text
`reset` returns appended to the last message; each call's return value as the tool's message.

Design choices: every call into the class (the instance, reset, each tool, get_reward) goes through
`seal_hub.envs.user.calls.run_limited` (a time limit, prints captured and dropped, results as text, cut when huge).
The model's mistakes are observations with the protocol's `ErrorKind` (unparseable text, an unknown tool,
arguments that do not bind, a tool that raised: ``Error: <ExceptionClass>: <message>``, a tool past the time limit,
which ends the episode because the abandoned call still holds the instance). The environment's own faults never
crash a run: a failed constructor or `reset` ends the episode unscored (`RESET_FAILED`, left out of the labels); a
reward function or `get_reward` that raises, hangs or returns no usable value (NaN, a string, None, a list of the
wrong length) scores 0 (`REWARD_INVALID`), as does a rollout no source scored (`UNSCORED`); each says so in one
line naming the class and the row (`UserSuite.warn`, once per row and fault). One instance per episode:
state kept at module or class level is shared between episodes, as under TRL (docs/environments.md). The verdict
passes when the reward is at least the suite's success threshold (1.0 unless set) and no fault ended the episode.

Not covered: the labels (`seal_hub.envs.user.labels`).
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from seal_hub.envs.episode import MAX_STEPS_PER_TURN, EpisodeBase, parse_error_results
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
from seal_hub.envs.user.dataset import ENVIRONMENT, UserTask
from seal_hub.envs.user.rewards import score
from seal_hub.envs.user.schema import bind

if TYPE_CHECKING:
    from seal_hub.envs.user.suite import UserSuite

RESET_FAILED = "user_env:reset_failed"  # the class or its reset failed: not the model's doing
REWARD_INVALID = "user_env:reward_invalid"  # a reward source raised, hung, or gave no number: scored 0
TOOL_HUNG = "user_env:tool_timeout"  # a tool ran past the time limit: the episode ended there
NO_REWARD = "user_env:no_reward"  # get_reward gave 0


@dataclass(frozen=True)
class UserVerdict(EpisodeVerdict):
    """The episode's one turn and its reward (not only 0 or 1); passed when its turn passed (the reward at least
    the success threshold, no fault)."""

    score: float = 0.0

    @property
    def reward(self) -> float:
        return self.score


class _Seeded:
    """Python's `random` (and numpy's, when loaded) seeded with `seed` inside, their states put back after."""

    def __init__(self, seed: int | None) -> None:
        self.seed = seed

    def __enter__(self) -> None:
        if self.seed is None:
            return
        self.state = random.getstate()
        random.seed(self.seed)
        numpy = sys.modules.get("numpy")
        self.numpy_state = numpy.random.get_state() if numpy is not None else None
        if numpy is not None:
            numpy.random.seed(self.seed % 2**32)

    def __exit__(self, *exc: object) -> None:
        if self.seed is None:
            return
        random.setstate(self.state)
        if self.numpy_state is not None:
            sys.modules["numpy"].random.set_state(self.numpy_state)


class UserEpisode(EpisodeBase):
    """One task of a `UserSuite` on its own instance of the class (module docstring)."""

    def __init__(self, suite: UserSuite, task: UserTask, config: Any = None) -> None:
        super().__init__(task)
        self.suite = suite
        self.max_steps = getattr(config, "max_steps_per_turn", None) or MAX_STEPS_PER_TURN
        episode_cap = getattr(config, "max_steps_per_episode", None)
        if episode_cap:
            self.max_steps = min(self.max_steps, episode_cap)
        self._instance: Any = None
        self._steps = 0
        self._calls = 0
        self._done = False
        self._fault: str | None = None  # RESET_FAILED, TOOL_HUNG or REWARD_INVALID
        self._score: float | None = None
        self.environment = suite.environments[task.environment]
        self._prompt: list[dict[str, Any]] = []  # what reward functions get, as TRL gives it
        self._completion: list[dict[str, Any]] = []

    # ----- calls into the user's class -----

    def _call(self, function: Any, kwargs: dict[str, Any]) -> CallOutcome:
        return run_limited(function, kwargs, self.suite.spec.call_timeout_s)

    def _where(self) -> str:
        return f"environment class {self.environment.label}, row {self.task.index} (task {self.task.id})"

    def _start(self) -> Observation:
        self._steps = self._calls = 0
        self._done, self._fault, self._score = False, None, None
        self._completion = []
        messages = list(self.task.messages)
        tools = self.environment.schemas
        if self.environment.factory is None:  # plain tools: nothing to make or reset
            self._prompt = [m.to_chat() for m in messages]
            return Observation(0, messages=tuple(messages), tools=tools)
        row = dict(self.task.row)
        if self.suite.multi_environment:
            row.pop(ENVIRONMENT, None)  # TRL's control column, not reset's
        with _Seeded(self.task.seed):
            made = self._call(self.environment.factory, {})
            outcome = self._call(made.value.reset, row) if made.ok else made
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
        self._prompt = [m.to_chat() for m in messages]
        return Observation(0, messages=tuple(messages), tools=tools)

    def _tool_result(self, call: ToolCall) -> ToolResult:
        spec = self.environment.tool(call.name)
        if spec is None:
            names = ", ".join(tool.name for tool in self.environment.tools)
            return ToolResult(
                call, f"Error: no tool named {call.name!r}; the tools are: {names}", ErrorKind.UNKNOWN_TOOL
            )
        kwargs, kind, message = bind(spec, call.arguments)
        if kind is not None:
            return ToolResult(call, f"Error: {message}", kind)
        function = spec.function if spec.function is not None else getattr(self._instance, call.name)
        outcome = self._call(function, kwargs or {})
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
            return StepResult(Observation(0, tools=self.environment.schemas), done=True, reward=0.0)
        if not action.tool_calls and not action.parse_errors:  # an answer without a call ends the episode
            return self._finish(truncated=False, action=action)
        results = list(parse_error_results(action))
        for call in action.tool_calls:
            self._calls += 1
            results.append(self._tool_result(call))
            if self._fault == TOOL_HUNG:
                break  # the hung call still holds the instance: nothing more runs on it
        self._record(action, results)
        observation = Observation(0, tool_results=tuple(results), tools=self.environment.schemas)
        if self._fault == TOOL_HUNG:
            self._done, self._score = True, 0.0
            self.suite.warn((TOOL_HUNG, self.task.id), f"{self._where()}: a tool call ran past the time limit")
            return StepResult(observation, done=True, reward=0.0)
        if self._steps >= self.max_steps:
            return self._finish(truncated=True, observation=observation)
        return StepResult(observation)

    def _record(self, action: Action, results: list[ToolResult]) -> None:
        """The step as TRL's completion messages: the reply with its calls, then each tool's result."""
        message: dict[str, Any] = {"role": "assistant", "content": action.content}
        if action.tool_calls:
            message["tool_calls"] = [
                {"type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in action.tool_calls
            ]
        self._completion.append(message)
        for result in results:
            name = result.call.name if result.call is not None else None
            self._completion.append({"role": "tool", "name": name, "content": result.content})

    def _finish(
        self, truncated: bool, observation: Observation | None = None, action: Action | None = None
    ) -> StepResult:
        self._done = True
        if action is not None:
            self._record(action, [])
        self._score = self._reward()
        observation = observation or Observation(0, tools=self.environment.schemas)
        return StepResult(observation, done=True, truncated=truncated, reward=self._score)

    def _completion_ids(self) -> list[int]:
        tokenizer = self.suite.reward_context.tokenizer
        if tokenizer is None:
            return []
        text = "".join(m["content"] for m in self._completion if m["role"] == "assistant")
        return list(tokenizer.encode(text, add_special_tokens=False))

    def _reward(self) -> float:
        """The rollout's reward from every source; a fault scores 0 and says so once (module docstring)."""
        scored = score(
            self.suite.reward_sources,
            instance=self._instance,
            has_factory=self.environment.factory is not None,
            prompt=self._prompt,
            completion=list(self._completion),
            completion_ids=self._completion_ids(),
            row=self.task.row,
            context=self.suite.reward_context,
            timeout_s=self.suite.spec.call_timeout_s,
        )
        if scored.fault is None:
            self.suite.observe_reward(scored.reward)
            return scored.reward
        self.suite.warn((REWARD_INVALID, self.task.id), f"{self._where()}: {scored.fault}; reward 0")
        self._fault = REWARD_INVALID
        return 0.0

    def _release(self) -> None:
        if self._started and not self._done and self._fault is None and self._prompt:
            self._done = True  # ended from outside (the context limit): scored as TRL scores every rollout
            self._score = self._reward()
        self._instance = None

    # ----- what the loop reads -----

    @property
    def done(self) -> bool:
        return self._done

    @property
    def tools(self) -> tuple[dict[str, Any], ...]:
        return self.environment.schemas

    @property
    def verdict(self) -> UserVerdict:
        value = self._score or 0.0
        if not self._done:
            return UserVerdict((), 1, score=0.0)
        passed = self._fault is None and value >= self.suite.spec.threshold
        error = self._fault or (NO_REWARD if not passed else None)
        turn = TurnVerdict(0, self.task.expects_call, self._calls, passed, error)
        return UserVerdict((turn,), 1, score=value)


def _error(outcome: CallOutcome) -> str:
    """'ExceptionClass: message' of a call that raised, in one line."""
    message = " ".join(str(outcome.error).split())
    return f"{outcome.error_class}: {message}" if message else outcome.error_class
