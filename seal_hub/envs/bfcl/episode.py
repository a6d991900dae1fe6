"""One BFCL multi-turn episode: isolated API instances, the step API, validation, per-turn verification.

`reset()` loads fresh instances of the task's API classes and returns the first user turn with the tools
visible now. `step(action)` takes the agent's parsed action: tool calls are validated against the tools
visible *at this turn* and executed by direct method call, and their results come back; an action with no
calls is the agent's final message for the turn, which is then verified, and the next user turn (or the
end, with the reward) comes back. The agent only ever sees observations: reset, close, the verifier and the
configuration are methods of this object, never tools.

Model mistakes (unknown or hidden tool, arguments that are not an object, missing / unexpected / oversized
arguments, a tool that raises or returns an error) become `ToolResult`s with an `ErrorKind` and never raise.
Ill-typed argument values run as BFCL runs them, labelled `wrong_type` with a note (BFCL's own ground truth
needs this: task 173 of each category keys tickets by strings where the doc says integer);
`reject_ill_typed=True` refuses them instead. Tools withheld until a later turn (miss_func) and functions
the task excludes are refused by default, as the SEAL paper's released configuration does;
`allow_hidden_tools=True` runs them as plain BFCL would. More than `max_steps_per_turn` calling steps in
one turn end the episode. Two rules: `step_limit="refuse"` (the training default) refuses the extra step and
ends the episode force-terminated (reward 0); `step_limit="bfcl"` is bfcl-eval's inference loop
(`base_handler.py` counts a step after executing it): the extra step executes, the turn ends, and the
episode ends force-terminated unless that was the last turn, which is then verified like any other (bfcl-eval
only fails an entry whose list of turns is short). The two differ only on a last turn. `max_steps_per_episode`
is the SEAL paper's training budget instead: every model step counts (calling or turn-ending), and once the
episode has taken that many without finishing it is cut (force-terminated, reward 0; the turns it did not
verify are labelled by `seal_hub.envs.bfcl.labels`).

Not covered: turning model text into calls (`seal_hub.models.toolcalls`) or what the agent is shown beyond the
task's own messages and tools (`seal_hub.interface`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from seal_hub.config_checks import require_at_least_one
from seal_hub.envs.arguments import decode_arguments
from seal_hub.envs.bfcl.execution import execute, instantiate
from seal_hub.envs.bfcl.tasks import Task
from seal_hub.envs.bfcl.tools import DEFAULT_MAX_ARGUMENT_CHARS, Tool, class_tools, type_problem, validate_arguments
from seal_hub.envs.bfcl.verifier import GroundTruthTrace, check_turn
from seal_hub.envs.episode import EpisodeBase, EpisodeSettings, parse_error_results
from seal_hub.envs.protocol import (
    Action,
    EpisodeVerdict,
    ErrorKind,
    Observation,
    StepResult,
    ToolCall,
    ToolResult,
    TurnVerdict,
)

_NAME_SHOWN = 80  # characters of an offending tool name echoed back to the model


@dataclass(frozen=True)
class EpisodeConfig(EpisodeSettings):
    """BFCL's episode settings: the suite-neutral budgets and rules (`EpisodeSettings`) and BFCL's own checks."""

    max_argument_chars: int = field(
        default=DEFAULT_MAX_ARGUMENT_CHARS, metadata={"help": "Longest JSON form of one call's arguments."}
    )
    reject_ill_typed: bool = field(
        default=False,
        metadata={
            "help": "Refuse calls whose argument values do not fit the declared types. By default they run, as in "
            "BFCL, and are labelled (wrong_type) with a note."
        },
    )
    strict_abstention: bool = field(
        default=False,
        metadata={"help": "Fail a turn whose ground truth makes no call when the model calls a tool."},
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        require_at_least_one(self, "max_argument_chars")

    @classmethod
    def of(cls, settings: EpisodeSettings | None) -> EpisodeConfig:
        """`settings` as BFCL's config: itself if it is one, else BFCL's defaults with its budgets and rules."""
        if isinstance(settings, EpisodeConfig):
            return settings
        if settings is None:
            return cls()
        return cls(**settings.neutral())


@dataclass
class _Turn:
    """What happened in one user turn (the trajectory record reads this)."""

    index: int
    steps: list[tuple[Action, tuple[ToolResult, ...]]] = field(default_factory=list)
    model_calls: int = 0


class Episode(EpisodeBase):
    """A single rollout of one task. Create it through `BfclSuite.episode` (which shares the task's trace)."""

    def __init__(self, task: Task, trace: GroundTruthTrace, config: EpisodeSettings | None = None) -> None:
        super().__init__(task)
        self.config = EpisodeConfig.of(config)
        self._trace = trace
        self._all_tools: dict[str, Tool] = {t.name: t for c in task.involved_classes for t in class_tools(c)}
        self._instances: dict[str, Any] | None = None

    # ----- the base's hooks (the loop's control surface, never the agent's) -----

    def _start(self) -> Observation:
        """Fresh instances; the first user turn."""
        self._instances = instantiate(self.task)
        withheld = {name for names in self.task.withheld_until.values() for name in names}
        self._visible = {
            name: tool
            for name, tool in self._all_tools.items()
            if name not in withheld and name not in self.task.excluded_functions
        }
        self._schemas: tuple[dict[str, Any], ...] | None = None
        self._turn = 0
        self._turns: list[_Turn] = [_Turn(0)]
        self._verdicts: list[TurnVerdict] = []
        self._outputs: list[str] = []
        self._steps_in_turn = 0
        self._steps_in_episode = 0
        self._done = False
        self._force_terminated = False
        changed = self._reveal(0)
        return Observation(0, messages=self.task.user_messages(0), tools=self.tools, tools_changed=changed)

    def _step(self, action: Action) -> StepResult:
        """One agent action under the episode's step budget; see the module docstring."""
        self._steps_in_episode += 1
        result = self._step_in_turn(action)
        budget = self.config.max_steps_per_episode
        if not result.done and budget is not None and self._steps_in_episode >= budget:
            self._done = self._force_terminated = True  # the next user turn, if one came, is never shown
            cut = Observation(
                result.observation.turn_index, tool_results=result.observation.tool_results, tools=self.tools
            )
            return StepResult(cut, done=True, truncated=True, reward=0.0)
        return result

    def _step_in_turn(self, action: Action) -> StepResult:
        calling = bool(action.tool_calls) or (bool(action.parse_errors) and not self.config.end_turn_on_parse_error)
        if not calling:
            return self._end_turn()
        self._steps_in_turn += 1
        over_limit = self._steps_in_turn > self.config.max_steps_per_turn
        if over_limit and self.config.step_limit == "refuse":
            self._done = self._force_terminated = True
            return StepResult(Observation(self._turn, tools=self.tools), done=True, truncated=True, reward=0.0)
        results = tuple(self._call(call) for call in action.tool_calls)
        results += parse_error_results(action)
        record = self._turns[-1]
        record.steps.append((action, results))
        record.model_calls += len(action.tool_calls)
        if over_limit:  # the 'bfcl' rule: the step ran; the turn, and the episode, end here
            return self._stop_after_limit(results)
        return StepResult(Observation(self._turn, tool_results=results, tools=self.tools))

    def _release(self) -> None:
        """Free the API instances; the verdict and history stay readable."""
        self._instances = None

    # ----- read-only views -----

    @property
    def tools(self) -> tuple[dict[str, Any], ...]:
        """JSON-schema tools visible at the current turn."""
        if self._schemas is None:
            self._schemas = tuple(tool.schema for tool in self._visible.values())
        return self._schemas

    @property
    def done(self) -> bool:
        return self._done

    @property
    def turn_index(self) -> int:
        return self._turn

    @property
    def outputs(self) -> tuple[str, ...]:
        """Every executed call's output so far, in order (what the response check reads)."""
        return tuple(self._outputs)

    @property
    def history(self) -> tuple[_Turn, ...]:
        return tuple(self._turns)

    @property
    def verdict(self) -> EpisodeVerdict:
        return EpisodeVerdict(tuple(self._verdicts), self.task.num_turns, self._force_terminated)

    # ----- internals -----

    def _reveal(self, turn: int) -> bool:
        names = self.task.withheld_until.get(turn, ())
        for name in names:
            if name in self._all_tools:
                self._visible[name] = self._all_tools[name]
        if names:
            self._schemas = None
        return bool(names)

    def _end_turn(self) -> StepResult:
        record = self._turns[-1]
        turn = self._turn
        self._verdicts.append(
            check_turn(
                turn,
                self._trace.turns[turn],
                bool(self.task.ground_truth[turn]),
                self._instances,
                self._outputs,
                record.model_calls,
                self.config.strict_abstention,
            )
        )
        self._turn += 1
        self._steps_in_turn = 0
        if self._turn >= self.task.num_turns:
            self._done = True
            verdict = self.verdict
            return StepResult(Observation(turn, tools=self.tools), done=True, reward=verdict.reward)
        self._turns.append(_Turn(self._turn))
        changed = self._reveal(self._turn)
        observation = Observation(
            self._turn, messages=self.task.user_messages(self._turn), tools=self.tools, tools_changed=changed
        )
        return StepResult(observation)

    def _stop_after_limit(self, results: tuple[ToolResult, ...]) -> StepResult:
        """bfcl-eval after its step limit: a last turn is verified as it stands; an earlier one cuts the episode."""
        if self._turn + 1 >= self.task.num_turns:
            ended = self._end_turn()
            return replace(ended, observation=replace(ended.observation, tool_results=results))
        self._done = self._force_terminated = True
        observation = Observation(self._turn, tool_results=results, tools=self.tools)
        return StepResult(observation, done=True, truncated=True, reward=0.0)

    def _refuse(self, call: ToolCall, kind: ErrorKind, message: str) -> ToolResult:
        return ToolResult(call, f"Error: {message}", kind)

    def _resolve(self, call: ToolCall) -> Tool | ToolResult:
        name = call.name
        if not isinstance(name, str) or not name:
            return self._refuse(call, ErrorKind.UNKNOWN_TOOL, "the tool call has no tool name")
        if name in self._visible:
            return self._visible[name]
        shown = repr(name[:_NAME_SHOWN] + ("..." if len(name) > _NAME_SHOWN else ""))
        hidden = self._all_tools.get(name)
        if hidden is not None and self.config.allow_hidden_tools:
            return hidden
        if hidden is not None and name in self.task.excluded_functions:
            return self._refuse(call, ErrorKind.EXCLUDED_TOOL, f"tool {shown} is not available in this task")
        if hidden is not None:
            return self._refuse(call, ErrorKind.WITHHELD_TOOL, f"tool {shown} is not available at this point")
        available = ", ".join(self._visible)
        return self._refuse(
            call, ErrorKind.UNKNOWN_TOOL, f"unknown tool {shown}; the available tools are: {available}"
        )

    def _call(self, call: ToolCall) -> ToolResult:
        resolved = self._resolve(call)
        if isinstance(resolved, ToolResult):
            return resolved
        arguments, message = decode_arguments(call.arguments)
        if arguments is None:
            return self._refuse(call, ErrorKind.ARGUMENTS_NOT_OBJECT, message)
        problem = validate_arguments(resolved, arguments, self.config.max_argument_chars)
        if problem is not None:
            return self._refuse(call, *problem)
        ill_typed = type_problem(resolved, arguments)
        if ill_typed is not None and self.config.reject_ill_typed:
            return self._refuse(call, ErrorKind.WRONG_TYPE, ill_typed)
        content, kind = execute(self._instances, resolved, arguments)
        self._outputs.append(content)
        if ill_typed is not None:
            return ToolResult(call, content, ErrorKind.WRONG_TYPE, executed=True, note=ill_typed)
        return ToolResult(call, content, kind, executed=True)
