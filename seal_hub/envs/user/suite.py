"""`UserSuite`: a user's TRL setup (environment factory, reward functions, plain tools) and its dataset, as a suite
every command runs.

The suite imports the factory and the reward functions by path (`load`) unless they were given in Python
(`trl_setup`), probes the factories and reads their tools (`factory`, `schema`), its reward sources (`rewards`) and
its tasks off the dataset, the rows given in Python, or seeded episodes (`dataset`), and makes one `UserEpisode` per
rollout, each on a fresh instance. It trains: its one turn per
episode is labelled from what the protocol sees (`labels`), its tools run and can fail (recovery hints apply), its
schemas carry the signatures' defaults (`schema_defaults`: the schema cues show them), and it tells interface
evolution which exception classes its tools raised (`raised`). Where the dataset gives an answer key (the
`reference_calls` column) the suite has an oracle (`oracle_steps`) and an SFT warm-up (`warmup_script`: the key's
calls, then a closing message, kept only if `get_reward` passes them); rows without one teach nothing, and a
dataset without any says so in one line when a warm-up or the oracle asks.

`record()` is what its published environment version keeps (`UserEnvironmentRecord`: the factory's import path and
source hash, the reward functions' paths, the tool schemas, the dataset and revision or the seeded episodes, the
success threshold, the episode limits); `from_record` makes the suite back from one, warning in one line when the
source no longer hashes the same (and running the current code). A setup given in Python whose factory or reward
functions cannot be imported by name (a class inside a function, a partial, a lambda) records their names, and
`from_record` says in one line that it needs them given again (`user_suite_from_trl`).

With no success threshold given, the first reward that is neither 0 nor 1 is said once (`observe_reward`): passing
then means a reward of at least 1.0, which may not be what the user's score means.

Faults of the environment itself (a reset that fails for a row, a reward that is no number, a tool that hangs) are
said once per row and fault on stderr, in one line naming the class and the row (`warn`); the run goes on.

Not covered: the built-in suites (`seal_hub.envs.builtin`, which also resolves a user environment by its spec).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seal_hub.envs.protocol import Action
from seal_hub.envs.reference import ABSTAIN, CLOSING, WarmupScript
from seal_hub.envs.suite import SuiteCard, SuiteError
from seal_hub.envs.task_table import WHOLE_SPLITS, TaskTable
from seal_hub.envs.user.calls import truncate
from seal_hub.envs.user.dataset import (
    REFERENCE,
    TRAIN,
    UserTask,
    generated_tasks,
    held_out,
    load_tasks,
    names_split,
)
from seal_hub.envs.user.episode import UserEpisode
from seal_hub.envs.user.factory import probe
from seal_hub.envs.user.labels import diagnose, raised_classes
from seal_hub.envs.user.load import EnvironmentError, check_source, import_attribute, sources_hash
from seal_hub.envs.user.record import UserEnvironmentRecord
from seal_hub.envs.user.rewards import RewardContext, reward_sources
from seal_hub.envs.user.spec import EnvironmentSpec

_FROM_SPEC = object()  # the factory and reward functions are the spec's import paths

if TYPE_CHECKING:
    from seal_hub.diagnosis import RolloutDiagnosis
    from seal_hub.rollout.records import Trajectory


def card_dataset(spec: EnvironmentSpec) -> str:
    """What cards call the dataset: its repo id (with revision), or a local file's or folder's name only (a card
    never carries a path of the machine it was made on)."""
    if not spec.dataset:
        return spec.dataset_ref
    path = Path(spec.dataset).expanduser()
    return path.name if path.exists() else spec.dataset_ref


def _imported(path: str, what: str) -> object:
    """The object at `path`; a str, number or other non-callable (not a dict) is one line naming it."""
    found = import_attribute(path)
    if not callable(found) and not (isinstance(found, Mapping) and what == "environment"):
        attribute = path.partition(":")[2]
        kinds = "a class, a function or a dict of them" if what == "environment" else "a function"
        raise EnvironmentError(f"{what} {path}: {attribute} is a {type(found).__name__}, not a class, {kinds}")
    return found


def _key_actions(task: UserTask) -> list[Action]:
    """The answer key's steps as calling actions: none where no call belongs (or the row gives no key)."""
    return [Action(tool_calls=calls) for calls in (task.reference or () if task.expects_call else ())]


class UserSuite(TaskTable):
    """A user environment class and its dataset as a suite (module docstring)."""

    turn_labels = True
    tool_errors = True  # its tools run and can raise
    not_trainable = None
    schema_defaults = True  # its schemas carry defaults, for the schema cues

    def __init__(
        self,
        spec: EnvironmentSpec,
        *,
        environment_factory: Any = _FROM_SPEC,
        reward_funcs: Any = _FROM_SPEC,
        reward_weights: list[float] | None = None,
        tools: list[Any] | None = None,
        tasks: dict[str, UserTask] | None = None,
    ) -> None:
        """The suite `spec` names; `environment_factory`, `reward_funcs`, `tools` and `tasks` given in Python
        (`seal_hub.envs.user.trl_setup`) instead of the spec's import paths and dataset."""
        self.spec = spec
        if environment_factory is _FROM_SPEC:
            environment_factory = _imported(spec.environment, "environment")
        if reward_funcs is _FROM_SPEC:
            reward_funcs = [_imported(path, "reward_funcs") for path in spec.reward_funcs]
        try:
            self.environments = probe(environment_factory, tools, spec.call_timeout_s)
        except EnvironmentError as exc:
            raise EnvironmentError(f"environment {spec.environment}: {exc}") from None
        self.multi_environment = isinstance(environment_factory, Mapping)
        self.reward_sources = reward_sources(reward_funcs, self.environments, reward_weights)
        self.reward_context = RewardContext()
        union: dict[str, Any] = {}
        for environment in self.environments.values():
            for tool in environment.tools:
                union.setdefault(tool.name, tool)
        self.tools = union
        self.tool_schemas: tuple[dict[str, Any], ...] = tuple(tool.schema for tool in union.values())
        self.class_name = " + ".join(dict.fromkeys(e.label for e in self.environments.values()))
        factories = list(environment_factory.values()) if self.multi_environment else [environment_factory]
        hashed = [f for f in factories if f is not None] + [e.cls for e in self.environments.values() if e.cls]
        hashed += [source.function for source in self.reward_sources if source.function is not None]
        self.source_sha256 = sources_hash(hashed + list(tools or ()))
        if tasks is None and not spec.dataset:
            tasks = generated_tasks(spec.train_episodes, spec.episodes or 0, spec.episode_seed)
        elif tasks is None:
            keys = tuple(self.environments) if self.multi_environment else None
            tasks = load_tasks(spec, prompt_required=environment_factory is None, environments=keys)
        self.tasks: dict[str, UserTask] = tasks
        self._check_references()
        self.categories = tuple(dict.fromkeys(task.category for task in self.tasks.values()))
        self.name = spec.environment
        self.default_split = "named" if names_split(self.tasks) else f"made ({spec.eval_fraction:g} held out)"
        self.card = SuiteCard(card_dataset(spec), self.class_name, "Multi-turn tool use")
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

    def observe_reward(self, reward: float) -> None:
        """Say once when a reward is neither 0 nor 1 and no success threshold was given (module docstring)."""
        if self.spec.success_threshold is None and reward not in (0.0, 1.0):
            self.warn(
                "reward-not-0/1",
                f"environment {self.name}: a reward of {reward:g} is neither 0 nor 1; an episode passes SEAL's "
                f"labels at reward >= {self.spec.threshold:g}: set success_threshold (--success_threshold) to say "
                "what passes",
            )

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
            made = split_file == "stratified" or not names_split(self.tasks)
            test = held_out(self.tasks, self.spec.eval_fraction, seed, made=made)
            if split == "test":
                return tuple(task_id for task_id in self.tasks if task_id in test)
            return tuple(i for i, t in self.tasks.items() if i not in test and (made or t.split == TRAIN))
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
        modules = [sys.modules.get(e.cls.__module__) for e in self.environments.values() if e.cls is not None]
        modules += [sys.modules.get(getattr(t.function, "__module__", "")) for t in self.tools.values() if t.function]
        found = {}
        for name in sorted(raised_classes(trajectories)):
            short = name.rsplit(".", 1)[-1]
            cls = next((getattr(m, short) for m in modules if m is not None and hasattr(m, short)), None)
            doc = inspect.getdoc(cls) if inspect.isclass(cls) and cls.__module__ != "builtins" else ""
            found[name] = doc or ""
        return found

    def record(self) -> UserEnvironmentRecord:
        """What a version made on this suite keeps of it."""
        spec = self.spec
        return UserEnvironmentRecord(
            class_path=spec.environment,
            source_sha256=self.source_sha256,
            tools=self.tool_schemas,
            dataset=spec.dataset,
            dataset_revision=spec.dataset_revision,
            eval_fraction=spec.eval_fraction,
            call_timeout_s=spec.call_timeout_s,
            max_result_chars=spec.max_result_chars,
            reward_funcs=spec.reward_funcs,
            success_threshold=spec.success_threshold,
            episodes=spec.episodes,
            episode_seed=spec.episode_seed,
            importable=spec.importable,
        )

    @classmethod
    def from_record(cls, record: UserEnvironmentRecord) -> UserSuite:
        """The suite a version was made on, from its record; a changed source is one warning line, a setup given
        in Python that cannot be imported by name one error line."""
        if not record.importable or (record.dataset is None and record.episodes is None):
            raise EnvironmentError(
                f"environment {record.class_path}: this version was made on a setup given in Python (its factory, "
                "reward functions or rows cannot be loaded by name); build the suite with "
                "seal_hub.envs.user.trl_setup.user_suite_from_trl(...) from the same objects"
            )
        spec = EnvironmentSpec(
            record.class_path,
            record.dataset,
            record.dataset_revision,
            eval_fraction=record.eval_fraction,
            call_timeout_s=record.call_timeout_s,
            max_result_chars=record.max_result_chars,
            reward_funcs=tuple(record.reward_funcs),
            success_threshold=record.success_threshold,
            episodes=record.episodes,
            episode_seed=record.episode_seed,
        )
        suite = cls(spec)
        warning = check_source(spec.environment, record.source_sha256, suite.source_sha256)
        if warning is not None:
            print(f"seal-hub: {warning}", file=sys.stderr)
        return suite
