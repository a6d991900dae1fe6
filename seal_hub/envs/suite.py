"""The suite contract: everything one suite's behaviour is, in one protocol that the rest of seal_hub reads.

A suite is a set of tasks (each with an id and a category) and a factory of isolated episodes that speak the
step protocol of `seal_hub.envs.protocol`: `reset() -> Observation`, `step(Action) -> StepResult`, `close()`,
and at the end a `verdict` (an `EpisodeVerdict` of per-turn `TurnVerdict`s, reward 1 only if it passed); every
suite's episode gets the caller guards from `seal_hub.envs.episode.EpisodeBase`. The engine never looks past
this contract, so BFCL multi-turn, BFCL single-turn, BFCL memory and tau2 all go through the same batched loop
and land in the same `Trajectory` records.

Beyond its episodes a suite says, and nothing outside its own package says for it:
- its splits (`split_ids`) and the name results record for its split when no split file is given
  (`default_split`);
- how its reference answers drive an episode (`oracle_steps`: per user turn, the calling actions a perfect agent
  takes; the harness ends each turn with a plain message), so `seal-hub eval --model oracle` checks every suite's
  protocol the same way;
- how a finished rollout is labelled turn by turn (`turn_labels`, `diagnose`: the labels of
  `seal_hub.diagnosis`);
- what its SFT warm-up teaches for a task (`warmup_script`, `seal_hub.envs.reference`);
- whether its tools run and can fail (`tool_errors`: recovery hints have something to say), which exception
  classes they raised in a batch of rollouts (`raised`: each gets a recovery hint; None when the suite does not
  say), whether its tool schemas carry default values (`schema_defaults`: the schema cues show them), and whether
  it can train (`not_trainable`: why not, None when it can);
- the record a published interface version keeps of where its tasks come from (`record`: a user environment's
  class and dataset; None for a built-in suite, which its name selects);
- what a published card calls it (`card`), and which `seal-hub eval` / `rollout` flags select it
  (`command_flags`).

`SuiteCard` is the card as a record; the built-in suites by name are `seal_hub.envs.builtin`, and the defaults a
built-in suite shares (`seal_hub.envs.task_table.TaskTable`) answer the optional parts. The core (trainer, rollout
engine, evaluation, diagnosis, interface, hub, report, replay) reads a suite through this protocol only: never
`hasattr`/`getattr` on a suite, and never a suite's own package (the BFCL suites need the `bfcl` extra).

Not covered: scoring beyond per-episode verdicts (`seal_hub.evaluation`), what the labels add up to
(`seal_hub.diagnosis`)."""

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

    def split_ids(self, split: str, split_file: str | None = None, seed: int = 0) -> tuple[str, ...]: ...

    def episode(self, task: SuiteTask | str, config: Any = None) -> SuiteEpisode: ...

    def oracle_steps(self, task: SuiteTask) -> Sequence[Sequence[Action]]: ...

    def diagnose(self, trajectory: Trajectory, task: SuiteTask) -> RolloutDiagnosis: ...

    def warmup_script(self, task: SuiteTask) -> WarmupScript | None: ...

    def command_flags(self) -> str: ...

    def raised(self, trajectories: Iterable[Trajectory]) -> Mapping[str, str] | None: ...

    def record(self) -> UserEnvironmentRecord | None: ...


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
