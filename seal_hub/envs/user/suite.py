"""`UserSuite`: a user's TRL-form environment class and its dataset, as a suite every command runs.

The suite imports the class (`load`), reads its tools off the class (`schema`) and its tasks off the dataset
(`dataset`), and makes one `UserEpisode` per rollout, each on a fresh instance. It trains: its one turn per
episode is labelled from what the protocol sees (`labels`), its tools run and can fail (recovery hints apply), its
schemas carry the signatures' defaults (`schema_defaults`: the schema cues show them), and it tells interface
evolution which exception classes its tools raised (`raised`). Where the dataset gives an answer key (the
`reference_calls` column) the suite has an oracle (`oracle_steps`) and an SFT warm-up (`warmup_script`: the key's
calls, then a closing message, kept only if `get_reward` passes them); rows without one teach nothing, and a
dataset without any says so in one line when a warm-up or the oracle asks.

`record()` is what its published environment version keeps (`UserEnvironmentRecord`: the class's import path and
source hash, the tool schemas, the dataset and revision, the episode limits); `from_record` makes the suite back
from one, warning in one line when the class's source no longer hashes the same (and running the current code).

Faults of the environment itself (a reset that fails for a row, a reward that is no number, a tool that hangs) are
said once per row and fault on stderr, in one line naming the class and the row (`warn`); the run goes on.

Not covered: the built-in suites (`seal_hub.envs.builtin`, which also resolves a user environment by its spec).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seal_hub.envs.protocol import Action
from seal_hub.envs.reference import ABSTAIN, CLOSING, WarmupScript
from seal_hub.envs.suite import SuiteCard, SuiteError
from seal_hub.envs.task_table import WHOLE_SPLITS, TaskTable
from seal_hub.envs.user.calls import truncate
from seal_hub.envs.user.dataset import REFERENCE, TRAIN, UserTask, held_out, load_tasks, names_split
from seal_hub.envs.user.episode import UserEpisode
from seal_hub.envs.user.labels import diagnose, raised_classes
from seal_hub.envs.user.load import EnvironmentError, check_source, import_class, source_hash
from seal_hub.envs.user.schema import tool_specs
from seal_hub.envs.user.spec import EnvironmentSpec

if TYPE_CHECKING:
    from seal_hub.diagnosis import RolloutDiagnosis
    from seal_hub.interface import UserEnvironmentRecord
    from seal_hub.rollout.records import Trajectory


def card_dataset(spec: EnvironmentSpec) -> str:
    """What cards call the dataset: its repo id (with revision), or a local file's or folder's name only (a card
    never carries a path of the machine it was made on)."""
    path = Path(spec.dataset).expanduser()
    return path.name if path.exists() else spec.dataset_ref


def _key_actions(task: UserTask) -> list[Action]:
    """The answer key's steps as calling actions: none where no call belongs (or the row gives no key)."""
    return [Action(tool_calls=calls) for calls in (task.reference or () if task.expects_call else ())]


class UserSuite(TaskTable):
    """A user environment class and its dataset as a suite (module docstring)."""

    turn_labels = True
    tool_errors = True  # its tools run and can raise
    not_trainable = None
    schema_defaults = True  # its schemas carry defaults, for the schema cues

    def __init__(self, spec: EnvironmentSpec) -> None:
        self.spec = spec
        self.environment_class = import_class(spec.environment)
        if not callable(getattr(self.environment_class, "get_reward", None)):
            raise EnvironmentError(
                f"environment {spec.environment}: class {spec.class_name} defines no get_reward(); SEAL scores each "
                "episode with it (TRL's form: a float from the finished episode's state)"
            )
        self.class_name = spec.class_name
        specs = tool_specs(self.environment_class)
        self.tools = {tool.name: tool for tool in specs}
        self.tool_schemas: tuple[dict[str, Any], ...] = tuple(tool.schema for tool in specs)
        self.source_sha256 = source_hash(self.environment_class)
        self.tasks: dict[str, UserTask] = load_tasks(spec)
        self._check_references()
        self.categories = tuple(dict.fromkeys(task.category for task in self.tasks.values()))
        self.name = spec.environment
        self.default_split = "named" if names_split(self.tasks) else f"made ({spec.eval_fraction:g} held out)"
        self.card = SuiteCard(card_dataset(spec), spec.class_name, "Multi-turn tool use")
        self._said: set[Any] = set()

    def __repr__(self) -> str:
        return f"UserSuite({self.name}, {len(self.tasks)} tasks of {self.spec.dataset_ref})"

    def _check_references(self) -> None:
        """An answer key that calls a tool the class does not have is a defect of the dataset: one line."""
        for task in self.tasks.values():
            for call in (call for step in task.reference or () for call in step):
                if call.name not in self.tools:
                    raise EnvironmentError(
                        f"dataset {self.spec.dataset_ref}, row {task.index}, column {REFERENCE}: tool {call.name!r} "
                        f"is not a tool of {self.class_name} (its tools: {', '.join(self.tools)})"
                    )

    @property
    def has_reference(self) -> bool:
        """Whether any row gives an answer key."""
        return any(task.reference is not None for task in self.tasks.values())

    # ----- what the episodes share (read only) -----

    def warn(self, key: Any, message: str) -> None:
        """Say `message` on stderr, once per `key` (a row's fault is said once, not once per rollout)."""
        if key not in self._said:
            self._said.add(key)
            print(f"seal-hub: {message}", file=sys.stderr)

    def truncate(self, text: str) -> str:
        return truncate(text, self.spec.max_result_chars)

    # ----- the suite contract -----

    def split_ids(self, split: str, split_file: str | None = None, seed: int = 0) -> tuple[str, ...]:
        """`train` / `test`: the dataset's named split, else a seeded fraction of every category held out (`seed`;
        `split_file` 'stratified' makes one even where the dataset names one); a split file's lists; `all`:
        every task; a category: its tasks."""
        if split_file not in (None, "stratified"):
            return super().split_ids(split, split_file, seed)
        if split in ("train", "test"):
            test = held_out(self.tasks, self.spec.eval_fraction, seed, made=split_file == "stratified")
            return tuple(task_id for task_id in self.tasks if (task_id in test) == (split == "test"))
        if split in WHOLE_SPLITS or split in self.categories:
            return super().split_ids(split)
        named = sorted({t.split for t in self.tasks.values() if t.split not in (None, TRAIN)})
        if split in named:
            return tuple(task_id for task_id, task in self.tasks.items() if task.split == split)
        choices = ", ".join(["train", "test", "all", *named, *self.categories])
        raise SuiteError(f"unknown split {split!r} for environment {self.name}; choose one of: {choices}")

    def episode(self, task: UserTask | str, config: Any = None) -> UserEpisode:
        """A new episode of `task` on a fresh instance; `config`'s step budgets apply (`max_steps_per_turn`)."""
        task = self.task(task) if isinstance(task, str) else task
        return UserEpisode(self, task, config)

    def oracle_steps(self, task: UserTask) -> list[list[Action]]:
        """The one turn of the answer key: one action per step (none for an abstention)."""
        if not self.has_reference:
            raise SuiteError(
                f"environment {self.name}: its dataset has no {REFERENCE} column, and --model oracle replays it"
            )
        return [_key_actions(task)]

    def diagnose(self, trajectory: Trajectory, task: UserTask) -> RolloutDiagnosis:
        """The one turn's label (`seal_hub.envs.user.labels`)."""
        return diagnose(trajectory, task)

    def warmup_script(self, task: UserTask) -> WarmupScript | None:
        """The answer key's steps and a closing message (the abstention where no call belongs), kept only if
        `get_reward` passes them; None for a row without a key (and for every row of a dataset without any)."""
        if not self.has_reference or (task.reference is None and task.expects_call):
            return None
        replies = _key_actions(task)
        replies.append(Action(content=CLOSING if replies else ABSTAIN))
        return WarmupScript(self.episode(task), tuple(replies), must_pass=True)

    def command_flags(self) -> str:
        """The `seal-hub eval` / `rollout` flags that select this environment and its held-out split."""
        return self.spec.flags()

    # ----- what interface evolution and the published version read -----

    def raised(self, trajectories: Iterable[Trajectory]) -> dict[str, str]:
        """The exception classes the tools raised in `trajectories`, each with its docstring where the class can be
        found in the environment's module (`seal_hub.interface.evolve.exception_hint` reads it)."""
        module = sys.modules.get(self.environment_class.__module__)
        found = {}
        for name in sorted(raised_classes(trajectories)):
            cls = getattr(module, name.rsplit(".", 1)[-1], None)
            doc = inspect.getdoc(cls) if inspect.isclass(cls) and cls.__module__ != "builtins" else ""
            found[name] = doc or ""
        return found

    def record(self) -> UserEnvironmentRecord:
        """What a version made on this suite keeps of it."""
        from seal_hub.interface import UserEnvironmentRecord

        return UserEnvironmentRecord(
            class_path=self.spec.environment,
            source_sha256=self.source_sha256,
            tools=self.tool_schemas,
            dataset=self.spec.dataset,
            dataset_revision=self.spec.dataset_revision,
            eval_fraction=self.spec.eval_fraction,
            call_timeout_s=self.spec.call_timeout_s,
            max_result_chars=self.spec.max_result_chars,
        )

    @classmethod
    def from_record(cls, record: UserEnvironmentRecord) -> UserSuite:
        """The suite a version was made on, from its record; a changed class source is one warning line."""
        spec = EnvironmentSpec(
            record.class_path,
            record.dataset,
            record.dataset_revision,
            eval_fraction=record.eval_fraction,
            call_timeout_s=record.call_timeout_s,
            max_result_chars=record.max_result_chars,
        )
        suite = cls(spec)
        warning = check_source(spec.environment, record.source_sha256, suite.source_sha256)
        if warning is not None:
            print(f"seal-hub: {warning}", file=sys.stderr)
        return suite
