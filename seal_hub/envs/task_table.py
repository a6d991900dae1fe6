"""The task table every built-in suite shares: lookup by id, selection, what a split means, the contract's defaults.

The OOD suites (`bfcl-single`, `bfcl-memory`, `tau2-telecom`) share simple splits: `test` and `all` are every
task; a category name is that category's tasks; a split file (JSON with a `test` list, as the BFCL split files)
picks ids by hand. Anything else is a `SuiteError` that names the choices. One error message per mistake, one
line each. bfcl-single, which can also train, puts `train` and `test` halves on top
(`seal_hub.envs.bfcl_single.suite`).

The defaults of the rest of the contract (`seal_hub.envs.suite.Suite`) are a suite with no turn labels and no
warm-up (both say so in one line; the built-in suites that have them are `seal_hub.envs.builtin`'s to name, which
imports the suites, so this module, which they import, does not), whose split source is "default", whose tool
schemas carry no defaults, which names no exception classes for recovery hints (`raised`), which keeps no record
beyond its name (`record`) and which the command line selects by name (`--suite NAME`); each suite sets its own
`tool_errors`, `not_trainable` and `card`.

Not covered: the tasks themselves (each suite's own `tasks.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from seal_hub.diagnosis.labels import DiagnosisError
from seal_hub.envs.splits import load_split
from seal_hub.envs.suite import SuiteError, UnknownTaskError

if TYPE_CHECKING:
    from seal_hub.envs.user.record import UserEnvironmentRecord
    from seal_hub.rollout.records import Trajectory

WHOLE_SPLITS = ("test", "all")


class TaskTable:
    """Mixin for a suite with `name`, `categories` and `tasks` (id -> task): `task`, `select`, `split_ids`, and
    the contract's defaults (no turn labels, no warm-up)."""

    name: str
    categories: tuple[str, ...]
    tasks: Mapping[str, Any]
    default_split = "default"
    turn_labels = False
    schema_defaults = False
    reward_context = None  # only a user's TRL setup has reward functions to bind

    def __len__(self) -> int:
        return len(self.tasks)

    def task(self, task_id: str) -> Any:
        """The task `task_id`; an unknown id is an `UnknownTaskError` that shows what ids look like."""
        try:
            return self.tasks[task_id]
        except KeyError:
            example = next(iter(self.tasks), "?")
            raise UnknownTaskError(
                f"no {self.name} task {task_id!r}; ids look like {example!r} ({len(self.tasks)})"
            ) from None

    def select(self, task_ids: Iterable[str]) -> list[Any]:
        """Tasks for the given ids, in that order; every unknown id is named in one error."""
        ids = list(task_ids)
        unknown = [task_id for task_id in ids if task_id not in self.tasks]
        if unknown:
            shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
            raise UnknownTaskError(f"{len(unknown)} task id(s) not in the {self.name} suite: {shown}")
        return [self.tasks[task_id] for task_id in ids]

    def split_ids(self, split: str, split_file: str | None = None, seed: int = 0) -> tuple[str, ...]:
        """`test` / `all`: every task; a category: its tasks; with `split_file`: that file's `split` list."""
        if split_file is not None:
            try:
                return load_split(split_file, known_ids=set(self.tasks)).ids(split)
            except ValueError as exc:
                raise SuiteError(f"{self.name}: {exc}") from None
        if split in WHOLE_SPLITS:
            return tuple(self.tasks)
        if split in self.categories:
            return tuple(task_id for task_id, task in self.tasks.items() if task.category == split)
        choices = ", ".join(self.categories)
        raise SuiteError(f"unknown split {split!r} for suite {self.name}; choose test, all or a category: {choices}")

    def diagnose(self, trajectory: Any, task: Any) -> Any:
        """No turn labels here: a `DiagnosisError` that says so (`seal-hub diagnose` names the suites with them)."""
        raise DiagnosisError(f"suite {self.name!r} has no turn labels")

    def warmup_script(self, task: Any) -> Any:
        """No reference answers to teach here: a `ValueError` that says so (a trainable suite has them)."""
        raise ValueError(f"no SFT warm-up for suite {self.name!r}: it has no reference answers to teach")

    def command_flags(self) -> str:
        """The `seal-hub eval` / `rollout` flags that select this suite: its name."""
        return f"--suite {self.name}"

    def raised(self, trajectories: Iterable[Trajectory]) -> Mapping[str, str] | None:
        """No exception classes named for recovery hints: the interface's own hints stand."""
        return None

    def record(self) -> UserEnvironmentRecord | None:
        """No record beyond the suite's name, which selects it."""
        return None
