"""The suite contract: everything one suite's behaviour is, in one protocol that the rest of seal_hub reads.

A suite is a set of tasks (each with an id and a category) and a factory of isolated episodes that speak the
step protocol of `seal_hub.envs.protocol`: `reset() -> Observation`, `step(Action) -> StepResult`, `close()`,
and at the end a `verdict` (an `EpisodeVerdict` of per-turn `TurnVerdict`s, reward 1 only if it passed); every
suite's episode gets the caller guards from `seal_hub.envs.episode.EpisodeBase`. Beyond its episodes a suite says,
and nothing outside its own package says for it, its splits, its oracle, its turn labels, its SFT warm-up, what
its tools can do, whether it can train, the record a published version keeps of it and its card (each member of
`Suite` says what it answers).

Design choice: the core (trainer, rollout engine, evaluation, diagnosis, interface, hub, report, replay) reads a
suite through this protocol only: never `hasattr`/`getattr` on a suite, and never a suite's own package (the BFCL
suites need the `bfcl` extra). So BFCL multi-turn, BFCL single-turn, BFCL memory, tau2 and user environments all
go through the same batched loop and land in the same `Trajectory` records. The built-in suites by name are
`seal_hub.envs.builtin`; the defaults a built-in suite shares (`seal_hub.envs.task_table.TaskTable`) answer the
optional parts.

Not covered: scoring beyond per-episode verdicts (`seal_hub.evaluation`), what the labels add up to
(`seal_hub.diagnosis`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from seal_hub.envs.protocol import Action, EpisodeVerdict, Observation, StepResult

if TYPE_CHECKING:  # what the suite hands up the loop; those packages sit above the suites
    from seal_hub.diagnosis import RolloutDiagnosis
    from seal_hub.envs.reference import WarmupScript
    from seal_hub.envs.user.record import UserEnvironmentRecord
    from seal_hub.rollout.records import Trajectory


@runtime_checkable
class SuiteTask(Protocol):
    """What the engine and the records read of a task."""

    id: str
    category: str


@runtime_checkable
class SuiteEpisode(Protocol):
    """One isolated episode of one task (its own state; nothing shared with other episodes but read-only data)."""

    task: SuiteTask

    def reset(self) -> Observation: ...

    def step(self, action: Action) -> StepResult: ...

    def close(self) -> None: ...

    @property
    def done(self) -> bool: ...

    @property
    def verdict(self) -> EpisodeVerdict: ...


@dataclass(frozen=True)
class SuiteCard:
    """How published cards name a suite: the model-index dataset (type and name) and task its scores are on."""

    dataset_type: str
    dataset_name: str
    task_name: str = "Multi-turn tool use"

    @classmethod
    def plain(cls, name: str) -> SuiteCard:
        """The card of a suite known only by its name: the name as dataset, multi-turn tool use."""
        return cls(name, name)


@runtime_checkable
class Suite(Protocol):
    """A suite: its tasks, splits, episodes and oracle, its turn labels, warm-up, training facts and card."""

    name: str
    categories: tuple[str, ...]
    tasks: Mapping[str, SuiteTask]
    default_split: str  # the split source results record when no split file is given ("paper", "default")
    turn_labels: bool  # `diagnose` labels its turns (False: one end-of-episode check, nothing per turn)
    tool_errors: bool  # its tools execute and can fail, so recovery hints have something to say
    not_trainable: str | None  # why it cannot train (one clause), None when it can
    schema_defaults: bool  # its tool schemas carry default values (the schema cues show them)
    # what a user's reward functions receive from the trainer (trainer_state, log_metric, tokenizer); None for
    # suites scored by their own verifier
    reward_context: Any
    card: SuiteCard

    def task(self, task_id: str) -> SuiteTask: ...

    def select(self, task_ids: Iterable[str]) -> list[SuiteTask]: ...

    def split_ids(self, split: str, split_file: str | None = None, seed: int = 0) -> tuple[str, ...]:
        """The task ids of `split` (its source: `split_file`, else the suite's own, named `default_split`)."""
        ...

    def episode(self, task: SuiteTask | str, config: Any = None) -> SuiteEpisode: ...

    def oracle_steps(self, task: SuiteTask) -> Sequence[Sequence[Action]]:
        """Per user turn, the calling actions a perfect agent takes (the harness ends each turn with a plain
        message), so `seal-hub eval --model oracle` checks every suite's protocol the same way."""
        ...

    def diagnose(self, trajectory: Trajectory, task: SuiteTask) -> RolloutDiagnosis:
        """A finished rollout labelled turn by turn (the labels of `seal_hub.diagnosis`)."""
        ...

    def warmup_script(self, task: SuiteTask) -> WarmupScript | None:
        """What the SFT warm-up teaches for `task` (`seal_hub.envs.reference`); None: nothing."""
        ...

    def command_flags(self) -> str:
        """The `seal-hub eval` / `rollout` flags that select this suite."""
        ...

    def raised(self, trajectories: Iterable[Trajectory]) -> Mapping[str, str] | None:
        """The exception classes its tools raised in these rollouts (name -> docstring; each gets a recovery
        hint); None when the suite does not say."""
        ...

    def record(self) -> UserEnvironmentRecord | None:
        """What a published interface version keeps of where its tasks come from (a user environment's class and
        dataset); None for a built-in suite, which its name selects."""
        ...


class SuiteError(ValueError):
    """An unknown suite, or one whose optional dependencies are not installed; the message says the fix."""


class UnknownTaskError(SuiteError, KeyError):
    """A task id the suite does not hold (a `KeyError` for lookups, a `SuiteError` for the command line)."""

    def __str__(self) -> str:  # KeyError's own str() would quote the message
        return str(self.args[0]) if self.args else ""


def in_turn(tasks: Sequence[Any], count: int | None = None, categories: Sequence[str] | None = None) -> list[Any]:
    """`count` of `tasks` (all when None), the categories taken in turn in the order they first appear, each
    category's tasks in their given order; only `categories` when given (an unknown one is a `SuiteError`).
    Any prefix of the result covers the categories evenly: held-out subsets, `seal-hub eval --limit`."""
    if categories:
        present = {task.category for task in tasks}
        unknown = [c for c in categories if c not in present]
        if unknown:
            raise SuiteError(f"categories {unknown} have no tasks here; the tasks' categories: {sorted(present)}")
        tasks = [task for task in tasks if task.category in set(categories)]
    queues: dict[str, list[Any]] = {}
    for task in tasks:
        queues.setdefault(task.category, []).append(task)
    chosen: list[Any] = []
    total = len(tasks) if count is None else min(count, len(tasks))
    depth = 0
    while len(chosen) < total:
        chosen += [queue[depth] for queue in queues.values() if depth < len(queue)][: total - len(chosen)]
        depth += 1
    return chosen
