"""The one episode base every suite builds on: the caller guards, the parse-error observation, the settings.

Every suite's episode answers the same misuse the same way (stepping before `reset()`, after `close()` or after
it finished raises `EpisodeError`) and answers text that held an unparseable call with the same `ToolResult`.
`EpisodeBase` holds both, so a suite writes only what is its own, in three hooks, as verifiers' `MultiTurnEnv`
leaves `env_response` to `ToolEnv`: `_start()` (fresh state, the first observation), `_step(action)` (one
agent action on a started, unfinished episode) and `_release()` (free resources on close). `done` and
`verdict` are the suite's too.

`EpisodeSettings` is the part of an episode's configuration that means the same in every suite: the step
budgets, and the rules of the protocol an episode runs under (whether tools withheld until a later turn run when
called, what a calling step past the turn's limit does, whether text with no parseable call ends the turn). The
rollout engine, the trainer and the evaluation protocol (`seal_hub.evaluation.protocol`) carry one without knowing
the suite; a suite without such a budget or rule ignores it. A suite with more settings extends it (BFCL's
`EpisodeConfig`, in its own package) and reads a plain `EpisodeSettings` as its own defaults plus these.

Not covered: what a step does (each suite's `episode.py`), the step records (`seal_hub.envs.protocol`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field, fields
from typing import Any

from seal_hub.config_checks import require_at_least_one
from seal_hub.envs.protocol import Action, EpisodeError, EpisodeVerdict, ErrorKind, Observation, StepResult, ToolResult

STEP_LIMIT_RULES = ("refuse", "bfcl")  # what a calling step past `max_steps_per_turn` does (`EpisodeSettings`)
MAX_STEPS_PER_TURN = 20  # bfcl-eval's MAXIMUM_STEP_LIMIT: calling steps in one user turn (training, evaluation)


@dataclass(frozen=True)
class EpisodeSettings:
    """Step budgets and protocol rules every suite reads the same way (a suite without one ignores it). The
    defaults are the training protocol's; `seal_hub.evaluation.protocol.EvalProtocol` sets the evaluation's."""

    max_steps_per_turn: int = field(
        default=MAX_STEPS_PER_TURN, metadata={"help": "Calling steps allowed in one user turn."}
    )
    max_steps_per_episode: int | None = field(
        default=None,
        metadata={"help": "Model steps allowed in the whole episode (the paper's training budget: 20); None: no cap."},
    )
    allow_hidden_tools: bool = field(
        default=False,
        metadata={"help": "Execute tools withheld until a later turn or excluded by the task when called."},
    )
    step_limit: str = field(
        default="refuse",
        metadata={
            "help": "What a calling step past max_steps_per_turn does. 'refuse': it is refused and the episode "
            "ends force-terminated. 'bfcl': it executes, then the turn ends and the episode with it (force-"
            "terminated unless it was the last turn, which is verified), as bfcl-eval's inference loop does."
        },
    )
    end_turn_on_parse_error: bool = field(
        default=False,
        metadata={"help": "End the turn when the model's text has no parseable call (bfcl-eval's inference loop)."},
    )

    def __post_init__(self) -> None:
        if self.step_limit not in STEP_LIMIT_RULES:
            raise ValueError(f"step_limit must be one of {STEP_LIMIT_RULES}, got {self.step_limit!r}")
        require_at_least_one(self, "max_steps_per_turn")
        require_at_least_one(self, "max_steps_per_episode", optional=True)

    def neutral(self) -> dict[str, Any]:
        """These settings alone, by name (a suite's own config copies them: `EpisodeConfig.of`)."""
        return {f.name: getattr(self, f.name) for f in fields(EpisodeSettings)}


def parse_error_results(action: Action) -> tuple[ToolResult, ...]:
    """One observation per span of the action's text that looked like a call and did not parse."""
    return tuple(
        ToolResult(None, f"Error: could not parse a tool call ({e.kind}): {e.message}", ErrorKind.PARSE_ERROR)
        for e in action.parse_errors
    )


class EpisodeBase(ABC):
    """Reset/step/close with the caller guards; subclasses implement `_start`, `_step`, `done` and `verdict`."""

    def __init__(self, task: Any) -> None:
        self.task = task
        self._started = False
        self._closed = False

    def reset(self) -> Observation:
        """Start (or restart) the episode on fresh state; returns the first observation."""
        if self._closed:
            raise EpisodeError(f"episode {self.task.id} is closed; create a new one")
        observation = self._start()
        self._started = True
        return observation

    def step(self, action: Action) -> StepResult:
        """Apply one agent action (see the suite's module docstring for what it does)."""
        if not self._started or self._closed:
            raise EpisodeError(f"episode {self.task.id}: call reset() before step() (and not after close())")
        if self.done:
            raise EpisodeError(f"episode {self.task.id} is finished; create or reset an episode to go on")
        return self._step(action)

    def close(self) -> None:
        """Free what the episode holds; the verdict stays readable."""
        self._release()
        self._closed = True

    def __enter__(self) -> EpisodeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    @abstractmethod
    def done(self) -> bool:
        """Whether the episode has ended (no further step is taken)."""

    @property
    @abstractmethod
    def verdict(self) -> EpisodeVerdict:
        """The per-turn verdicts so far, and the reward (1 only if every turn passed)."""

    @abstractmethod
    def _start(self) -> Observation:
        """Fresh state and the first observation (the guards have run)."""

    @abstractmethod
    def _step(self, action: Action) -> StepResult:
        """The suite's own step (the guards have run)."""

    def _release(self) -> None:  # noqa: B027 -- an optional hook: most suites hold nothing to free
        """Nothing to free by default."""
