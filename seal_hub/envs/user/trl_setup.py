"""TRL's `GRPOTrainer` arguments as a SEAL suite: the one entry `SealTrainer` calls to turn `environment_factory`,
`reward_funcs`, `tools`, `train_dataset` and `eval_dataset` (TRL 1.16's meaning of each) into a `UserSuite` and the
tasks to train and hold out.

- `train_dataset` (a `datasets.Dataset` or a list of row dicts): every row is a training task, as TRL trains on
  every row; `eval_dataset` (a `Dataset`, a dict of them, or rows): the held-out tasks SEAL's evaluations score,
  never trained on. Without `eval_dataset` nothing is held out (SEAL's held-out evaluation then has no tasks and
  `eval_every_steps` is refused by the trainer). An `IterableDataset` is refused in one line: SEAL keeps each task
  by id (its records, the frontier sampler, replay) and needs rows it can index.
- No `train_dataset` (TRL's dataset-free mode: `reset` makes the prompt, `max_steps` bounds training): one
  environment factory is needed (a dict routes rows, so it needs rows, as in TRL), and the tasks are seeded
  episodes: `train_episodes` to train on and `held_out_episodes` held out
  (`seal_hub.envs.user.dataset.generated_tasks`: how they are seeded and replayed).
- `reward_weights` are TRL's `GRPOConfig.reward_weights` (one per reward function); `success_threshold` the reward
  at or above which SEAL counts an episode passed.

What a published version can replay: a setup whose factory and reward functions import back by name
(`factory.factory_path`: module-level classes and functions) and whose tasks are a dataset-free environment's
seeded episodes is recorded with those names and replays under `seal-hub eval`; rows given in Python, or objects
that do not import by name, are recorded by name only (`importable` False), and `UserSuite.from_record` says so.

Not covered: training (`seal_hub.training.trainer`), the command line's path form (`seal_hub.envs.builtin`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from seal_hub.envs.user.dataset import TEST, TRAIN, UserTask, generated_tasks, tasks_from_rows
from seal_hub.envs.user.factory import callable_name, factory_path
from seal_hub.envs.user.load import EnvironmentError
from seal_hub.envs.user.spec import DEFAULT_CALL_TIMEOUT_S, DEFAULT_MAX_RESULT_CHARS, EnvironmentSpec
from seal_hub.envs.user.suite import UserSuite


@dataclass(frozen=True)
class TrlSetup:
    """A TRL setup as SEAL trains it: the suite, the tasks to train on and the tasks held out."""

    suite: UserSuite
    train_tasks: tuple[UserTask, ...]
    held_out_tasks: tuple[UserTask, ...]


def _rows(dataset: Any, what: str) -> list[dict[str, Any]]:
    """A dataset's rows as dicts: a `datasets.Dataset`, or a list of dicts."""
    if type(dataset).__name__ in ("IterableDataset", "IterableDatasetDict"):
        raise EnvironmentError(
            f"{what}: an IterableDataset cannot be used: SEAL keeps each task by id and needs rows it can index; "
            "materialize it (datasets.Dataset.from_list(list(dataset.take(n))))"
        )
    if isinstance(dataset, Sequence) and not isinstance(dataset, str):
        rows = list(dataset)
    elif hasattr(dataset, "__iter__") and hasattr(dataset, "column_names"):
        rows = [dict(row) for row in dataset]
    else:
        raise EnvironmentError(
            f"{what}: give a datasets.Dataset (or a list of row dicts), got {type(dataset).__name__}"
        )
    if not all(isinstance(row, Mapping) for row in rows):
        raise EnvironmentError(f"{what}: every row must be a dict of columns")
    return [dict(row) for row in rows]


def _display(obj: Any) -> str:
    """'module:qualname' of `obj` (a partial's function), whether or not it imports back by that name."""
    inner = obj
    while isinstance(inner, functools.partial):
        inner = inner.func
    module, qualname = getattr(inner, "__module__", None), getattr(inner, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str):
        return f"{module}:{qualname}"
    return f"{type(obj).__module__}:{type(obj).__qualname__}"


def _name(environment_factory: Any, tools: list[Callable[..., Any]] | None) -> tuple[str, bool]:
    """The setup's name ('module:qualname') and whether it imports back by that name."""
    if environment_factory is None:
        return "tools:" + ",".join(callable_name(tool) for tool in tools or ()), False
    if isinstance(environment_factory, Mapping):
        return "environments:" + ",".join(map(str, environment_factory)), False
    path = factory_path(environment_factory)
    return (path, True) if path is not None else (_display(environment_factory), False)


def user_suite_from_trl(
    environment_factory: Any = None,
    reward_funcs: Any = None,
    tools: list[Callable[..., Any]] | None = None,
    train_dataset: Any = None,
    eval_dataset: Any = None,
    *,
    reward_weights: list[float] | None = None,
    success_threshold: float | None = None,
    train_episodes: int = 0,
    held_out_episodes: int = 0,
    episode_seed: int = 0,
    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
) -> TrlSetup:
    """The suite and tasks of TRL's arguments (module docstring); anything unusable is one `EnvironmentError` line."""
    name, importable = _name(environment_factory, tools)
    funcs = (
        []
        if reward_funcs is None
        else list(reward_funcs)
        if isinstance(reward_funcs, list | tuple)
        else [reward_funcs]
    )
    paths = [factory_path(func) for func in funcs]
    importable = importable and all(paths) and not tools
    limits = dict(
        call_timeout_s=call_timeout_s, max_result_chars=max_result_chars, success_threshold=success_threshold
    )
    if train_dataset is None:
        if environment_factory is None or isinstance(environment_factory, Mapping):
            raise EnvironmentError(
                "train_dataset is needed unless one environment_factory makes the prompt in reset() (a dict of "
                "factories routes rows by their environment column, so it needs rows), as in TRL"
            )
        if train_episodes < 1:
            raise EnvironmentError(
                "without a train_dataset (reset makes the prompt), set max_steps > 0: it bounds training, as in TRL"
            )
        tasks = generated_tasks(train_episodes, held_out_episodes, episode_seed)
        spec = EnvironmentSpec(
            name,
            None,
            episodes=max(held_out_episodes, 1),
            train_episodes=train_episodes,
            episode_seed=episode_seed,
            reward_funcs=tuple(p for p in paths if p),
            importable=importable,
            **limits,
        )
    else:
        keys = tuple(environment_factory) if isinstance(environment_factory, Mapping) else None
        required = environment_factory is None
        tasks = tasks_from_rows(
            [(TRAIN, row) for row in _rows(train_dataset, "train_dataset")], "train_dataset", required, keys
        )
        if eval_dataset is not None:
            parts = eval_dataset.items() if isinstance(eval_dataset, Mapping) else [(None, eval_dataset)]
            for part, rows in parts:
                what = f"eval_dataset[{part!r}]" if part is not None else "eval_dataset"
                prefix = f"eval-{part}-" if part is not None else "eval-"
                tasks_from_rows([(TEST, row) for row in _rows(rows, what)], what, required, keys, tasks, prefix)
        spec = EnvironmentSpec(name, None, reward_funcs=tuple(p for p in paths if p), importable=False, **limits)
    suite = UserSuite(
        spec,
        environment_factory=environment_factory,
        reward_funcs=funcs,
        reward_weights=reward_weights,
        tools=tools,
        tasks=tasks,
    )
    train = tuple(task for task in tasks.values() if task.split == TRAIN)
    held = tuple(task for task in tasks.values() if task.split == TEST)
    return TrlSetup(suite, train, held)
