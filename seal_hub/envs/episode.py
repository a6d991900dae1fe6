"""The one episode base every suite builds on: the caller guards, the parse-error observation, the settings.

Every suite's episode answers the same misuse the same way (stepping before `reset()`, after `close()` or after
it finished raises `EpisodeError`) and answers text that held an unparseable call with the same `ToolResult`.
`EpisodeBase` holds both, so a suite writes only what is its own, in three hooks, as verifiers' `MultiTurnEnv`
leaves `env_response` to `ToolEnv`: `_start()` (fresh state, the first observation), `_step(action)` (one
agent action on a started, unfinished episode) and `_release()` (free resources on close). `done` and
`verdict` are the suite's too.

`EpisodeSettings` is the part of an episode's configuration that means the same in every suite (the step
budgets); the rollout engine carries one without knowing the suite. A suite with more settings extends it
(`seal_hub.envs.bfcl.EpisodeConfig`) and reads a plain `EpisodeSettings` as its own defaults plus these.

Not covered: what a step does (each suite's `episode.py`), the step records (`seal_hub.envs.protocol`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from seal_hub.config_checks import require_at_least_one
from seal_hub.envs.protocol import Action, EpisodeError, EpisodeVerdict, ErrorKind, Observation, StepResult, ToolResult


@dataclass(frozen=True)
class EpisodeSettings:
    """Step budgets every suite reads the same way (a suite without such a budget ignores them)."""

    max_steps_per_turn: int = field(default=20, metadata={"help": "Calling steps allowed in one user turn."})
    max_steps_per_episode: int | None = field(
        default=None,
        metadata={"help": "Model steps allowed in the whole episode (the paper's training budget: 20); None: no cap."},
    )

    def __post_init__(self) -> None:
        require_at_least_one(self, "max_steps_per_turn")
        require_at_least_one(self, "max_steps_per_episode", optional=True)


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
