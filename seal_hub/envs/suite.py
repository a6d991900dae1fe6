"""The smallest contract that lets several evaluation suites share the rollout engine, the records and the CLI.

A suite is a set of tasks (each with an id and a category) and a factory of isolated episodes that speak the
step protocol of `seal_hub.envs.protocol`: `reset() -> Observation`, `step(Action) -> StepResult`, `close()`,
and at the end a `verdict` (an `EpisodeVerdict` of per-turn `TurnVerdict`s, reward 1 only if it passed); every
suite's episode gets the caller guards from `seal_hub.envs.episode.EpisodeBase`. The
engine never looks past this contract, so BFCL multi-turn, BFCL single-turn, BFCL memory and tau2 all go
through the same batched loop and land in the same `Trajectory` records.

Each suite also says which task ids a named split holds (`split_ids`) and how its reference answers drive an
episode (`oracle_steps`: per user turn, the calling actions a perfect agent takes; the harness ends each turn
with a plain message), so `seal-hub eval --model oracle` checks every suite's protocol the same way.

`SUITES` maps a suite's name to a zero-argument factory that imports it lazily (optional extras stay
optional); `load_suite` gives a one-line error for an unknown name or a missing extra.

Not covered: scoring beyond per-episode verdicts (`seal_hub.evaluation`), the turn labels (bfcl and
bfcl-single, `seal_hub.diagnosis`), which suites can train (`seal_hub.training.suites`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from seal_hub.envs.protocol import Action, EpisodeVerdict, Observation, StepResult


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


@runtime_checkable
class Suite(Protocol):
    """An evaluation (or training) suite: its tasks, its splits, its episodes, its oracle."""

    name: str
    categories: tuple[str, ...]
    tasks: Mapping[str, SuiteTask]

    def task(self, task_id: str) -> SuiteTask: ...

    def select(self, task_ids: Iterable[str]) -> list[SuiteTask]: ...

    def split_ids(self, split: str, split_file: str | None = None, seed: int = 0) -> tuple[str, ...]: ...

    def episode(self, task: SuiteTask | str, config: Any = None) -> SuiteEpisode: ...

    def oracle_steps(self, task: SuiteTask) -> Sequence[Sequence[Action]]: ...


def _bfcl() -> Suite:
    from seal_hub.envs.bfcl import BfclSuite

    return BfclSuite()


def _bfcl_single() -> Suite:
    from seal_hub.envs.bfcl_single import BfclSingleSuite

    return BfclSingleSuite()


def _bfcl_memory() -> Suite:
    from seal_hub.envs.bfcl_memory import BfclMemorySuite

    return BfclMemorySuite()


def _tau2_telecom() -> Suite:
    from seal_hub.envs.tau2_telecom import Tau2TelecomSuite

    return Tau2TelecomSuite()


# name -> factory; each factory imports its suite only when asked, so a missing optional extra fails late
SUITES: dict[str, Callable[[], Suite]] = {
    "bfcl": _bfcl,
    "bfcl-single": _bfcl_single,
    "bfcl-memory": _bfcl_memory,
    "tau2-telecom": _tau2_telecom,
}


class SuiteError(ValueError):
    """An unknown suite, or one whose optional dependencies are not installed; the message says the fix."""


class UnknownTaskError(SuiteError, KeyError):
    """A task id the suite does not hold (a `KeyError` for lookups, a `SuiteError` for the command line)."""

    def __str__(self) -> str:  # KeyError's own str() would quote the message
        return str(self.args[0]) if self.args else ""


def load_suite(name: str) -> Suite:
    """The suite called `name`; an unknown name or a missing extra is a `SuiteError` that says what to do."""
    factory = SUITES.get(name)
    if factory is None:
        raise SuiteError(f"unknown suite {name!r}; choose one of: {', '.join(SUITES)}")
    return factory()


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


def suite_tasks(name: str, split: str, split_file: str | None = None, seed: int = 0) -> tuple[Suite, list[Any]]:
    """The suite called `name` and the tasks of its `split` (of `split_file` when given; `seed` seeds a
    'stratified' split): the one way every command picks its tasks."""
    suite = load_suite(name)
    return suite, suite.select(suite.split_ids(split, split_file, seed=seed))
