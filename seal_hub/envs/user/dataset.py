"""A user environment's tasks from its dataset: rows, ids, categories, and the split held out for evaluation.

Sources (`EnvironmentSpec.dataset`): a JSONL file (read here), another data file (`.json`, `.csv`, `.parquet`:
`datasets`' own loaders), a folder saved with `save_to_disk`, or a `datasets` repo id at `dataset_revision`. Each
row is one task (`tasks_from_rows`; its columns are tabled in docs/environments.md): a `prompt`, an optional
`id`, `category`, `split`, `expects_call` and answer key (`reference_calls`: `reference_steps`). Rows given in
Python (TRL's `train_dataset` and `eval_dataset`, `seal_hub.envs.user.trl_setup`) become tasks the same way, and
an environment with no dataset (TRL's dataset-free mode) gets numbered, seeded episodes (`generated_tasks`).

Design choices: `datasets` is imported only when a source needs it, so `import seal_hub.interface` and the config
checks stay light. The whole row reaches `reset(**row)`, as TRL passes it (only a dict of factories' `environment`
column is kept back). The held-out split is named or made and never trained on (`held_out`): the dataset's
`split` column or its own split names, else a seeded fraction of every category (`eval_fraction`).

Not covered: what reset does with a row (the user's class), the episode (`seal_hub.envs.user.episode`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seal_hub.envs.protocol import Message, ToolCall
from seal_hub.envs.user.load import EnvironmentError
from seal_hub.envs.user.spec import EnvironmentSpec

DEFAULT_CATEGORY = "default"
TRAIN = "train"
TEST = "test"
HELD_OUT_SEED_OFFSET = 1_000_000  # held-out episodes' seeds start here above episode_seed: never a train episode's
PLACEHOLDER_PROMPT = ({"role": "user", "content": ""},)  # TRL's prompt of a row without one
REFERENCE = "reference_calls"
ENVIRONMENT = "environment"  # a row's choice among a dict of environment factories (TRL's column)

Reference = tuple[tuple[ToolCall, ...], ...]  # per step, the calls made in it


@dataclass(frozen=True)
class UserTask:
    """One dataset row as a task: its id, category, first messages, the row reset receives, and its split."""

    id: str
    category: str
    messages: tuple[Message, ...]
    row: Mapping[str, Any] = field(compare=False)
    index: int = 0
    split: str | None = None  # the split the dataset names for it (None: the split is made)
    expects_call: bool = True
    reference: Reference | None = None  # the answer key's steps (`reference_calls`), None where the row has none
    environment: str | None = None  # a dict factory's name (the row's `environment` column)
    seed: int | None = None  # a dataset-free episode's seed (`generated_tasks`)


def _call(value: Any, where: str) -> ToolCall:
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise EnvironmentError(f"{where}: each call needs a 'name' string and an 'arguments' object, got {value!r}")
    arguments = value.get("arguments", {})
    if isinstance(arguments, str):  # the OpenAI form keeps arguments as a JSON string
        try:
            arguments = json.loads(arguments)
        except ValueError:
            arguments = None
    if not isinstance(arguments, dict):
        raise EnvironmentError(f"{where}: the arguments of call {value['name']!r} must be a JSON object")
    return ToolCall(value["name"], arguments)


def reference_steps(value: Any, where: str) -> Reference | None:
    """A row's `reference_calls` as steps of calls; None when the row gives none.

    The answer key is the calls a perfect agent makes, step by step: a list of steps, each a list of
    `{"name": ..., "arguments": {...}}` (arguments may be a JSON string); a flat list of calls is one step; an empty
    list, or a row that expects no call, is an abstention. With it the suite has an oracle (`seal-hub eval --model
    oracle`) and an SFT warm-up (`sft_warmup_steps`); rows without it teach nothing."""
    if value is None:
        return None
    where = f"{where}, column {REFERENCE}"
    if not isinstance(value, list):
        raise EnvironmentError(f"{where}: a list of steps (each a list of calls) or a list of calls, got {value!r}")
    if value and all(isinstance(step, dict) for step in value):
        value = [value]  # a flat list of calls: one step
    if not all(isinstance(step, list) and step for step in value):
        raise EnvironmentError(f"{where}: each step must be a non-empty list of calls, got {value!r}")
    return tuple(tuple(_call(call, where) for call in step) for step in value)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise EnvironmentError(f"dataset {path}: line {number} is not JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise EnvironmentError(f"dataset {path}: line {number} is not a JSON object")
        rows.append(row)
    return rows


def read_rows(spec: EnvironmentSpec) -> list[tuple[str | None, dict[str, Any]]]:
    """Every row of the dataset, with the name of the dataset split it came from (None for a single file)."""
    path = Path(spec.dataset).expanduser()
    if path.is_file() and path.suffix == ".jsonl":
        return [(None, row) for row in _jsonl(path)]
    try:
        import datasets
    except ImportError:  # pragma: no cover - datasets is a dependency of the package
        raise EnvironmentError(f"dataset {spec.dataset}: reading it needs the datasets package") from None
    try:
        if path.is_file():
            loader = {".json": "json", ".csv": "csv", ".parquet": "parquet"}.get(path.suffix)
            if loader is None:
                raise EnvironmentError(f"dataset {path}: use a .jsonl, .json, .csv or .parquet file, or a folder")
            loaded: Any = datasets.load_dataset(loader, data_files=str(path))
        elif path.is_dir():
            loaded = datasets.load_from_disk(str(path))
        else:
            loaded = datasets.load_dataset(spec.dataset, revision=spec.dataset_revision)
    except EnvironmentError:
        raise
    except Exception as exc:  # noqa: BLE001 -- datasets' many error types: one line naming the dataset
        raise EnvironmentError(f"dataset {spec.dataset_ref}: cannot be read ({type(exc).__name__}: {exc})") from None
    if isinstance(loaded, datasets.Dataset):
        return [(None, dict(row)) for row in loaded]
    named = len(loaded) > 1  # one split (a data file's 'train') names nothing
    return [(name if named else None, dict(row)) for name, part in loaded.items() for row in part]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: the text ones
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def prompt_messages(prompt: Any, where: str) -> tuple[Message, ...]:
    """A row's `prompt` as chat messages: a string is one user message; a list of {role, content} is taken as is."""
    if isinstance(prompt, tuple):
        prompt = list(prompt)
    if isinstance(prompt, str):
        return (Message("user", prompt),)
    if isinstance(prompt, list) and prompt and all(isinstance(m, dict) and "role" in m for m in prompt):
        return tuple(Message(str(m["role"]), _text(m.get("content", ""))) for m in prompt)
    raise EnvironmentError(
        f"{where}: prompt must be a string or a list of chat messages ({{'role', 'content'}}), got "
        f"{type(prompt).__name__}"
    )


def load_tasks(spec: EnvironmentSpec, prompt_required: bool = True, environments: tuple | None = None):
    """The dataset's rows as tasks, by id, in the dataset's order (`tasks_from_rows`)."""
    return tasks_from_rows(read_rows(spec), spec.dataset_ref, prompt_required, environments)


def tasks_from_rows(
    rows: list[tuple[str | None, dict[str, Any]]],
    name: str,
    prompt_required: bool = True,
    environments: tuple | None = None,
    tasks: dict[str, UserTask] | None = None,
    id_prefix: str = "",
) -> dict[str, UserTask]:
    """`rows` (with the split each names) as tasks, added to `tasks`; a row without a prompt (where one is
    required), an unknown `environment` (where `environments` names the dict's keys), or a repeated id is an
    `EnvironmentError` naming the dataset `name` and the row.

    The id is the `id` column, else `id_prefix` + the row's index; the category the `category` column, else
    `default`; a row's `split` column comes before the dataset split it was read from; `expects_call` false marks a
    task where no tool call belongs. A row without a prompt starts from TRL's one empty user message."""
    if not rows:
        raise EnvironmentError(f"dataset {name} has no rows")
    tasks = {} if tasks is None else tasks
    for index, (split_name, row) in enumerate(rows):
        where = f"dataset {name}, row {index}"
        if "prompt" not in row and prompt_required:
            raise EnvironmentError(f"{where}: no 'prompt' column (columns: {', '.join(map(str, row))})")
        chosen = None
        if environments is not None:
            chosen = row.get(ENVIRONMENT)
            if chosen not in environments:
                raise EnvironmentError(
                    f"{where}: environment {chosen!r} is not among environment_factory's: "
                    f"{', '.join(map(str, environments))}"
                )
        task_id = str(row["id"]) if row.get("id") is not None else f"{id_prefix}{index}"
        if task_id in tasks:
            raise EnvironmentError(f"{where}: id {task_id!r} is used twice; ids must be unique")
        split = row.get("split") if row.get("split") is not None else split_name
        expects = row.get("expects_call")
        tasks[task_id] = UserTask(
            id=task_id,
            category=str(row.get("category") or DEFAULT_CATEGORY),
            messages=prompt_messages(row.get("prompt", list(PLACEHOLDER_PROMPT)), where),
            row=row,
            index=index,
            split=str(split) if split is not None else None,
            expects_call=expects is None or bool(expects),
            reference=reference_steps(row.get(REFERENCE), where),
            environment=chosen,
        )
    return tasks


def generated_tasks(train: int, held_out: int, seed: int) -> dict[str, UserTask]:
    """A dataset-free environment's tasks: `train` episodes and `held_out` held-out ones.

    Each is reset from TRL's placeholder row with Python's `random` (and numpy's, when loaded) seeded from its seed
    for the factory and `reset` calls (`seal_hub.envs.user.episode`): `episode-<i>` trains (seed `seed + i`),
    `held-out-<j>` is held out (seed `seed + HELD_OUT_SEED_OFFSET + j`), never the same seeds. A published version
    records the count and seed, so `seal-hub eval` replays the same held-out episodes."""
    tasks: dict[str, UserTask] = {}
    for split, count, prefix, base in (
        (TRAIN, train, "episode", seed),
        (TEST, held_out, "held-out", seed + HELD_OUT_SEED_OFFSET),
    ):
        for index in range(count):
            row = {"prompt": [dict(m) for m in PLACEHOLDER_PROMPT]}
            messages = prompt_messages(row["prompt"], "placeholder")
            task_id = f"{prefix}-{index}"
            tasks[task_id] = UserTask(task_id, DEFAULT_CATEGORY, messages, row, index, split, seed=base + index)
    return tasks


def names_split(tasks: Mapping[str, UserTask]) -> bool:
    """Whether the dataset names every row's split."""
    return all(task.split is not None for task in tasks.values())


def held_out(tasks: Mapping[str, UserTask], fraction: float, seed: int, made: bool = False) -> frozenset[str]:
    """The ids held out for evaluation: the named split (the rows named `test`; where none is, every name but
    `train`), unless `made` or some row names none; else a seeded `fraction` of every category (rounded, at least one
    of a category with two or more tasks, never all of it)."""
    if not made and names_split(tasks):
        names = {task.split for task in tasks.values()}
        test = {TEST} if TEST in names else names - {TRAIN}
        return frozenset(task.id for task in tasks.values() if task.split in test)
    rng = random.Random(seed)
    chosen: list[str] = []
    categories: dict[str, list[str]] = {}
    for task in tasks.values():
        categories.setdefault(task.category, []).append(task.id)
    for ids in categories.values():
        if len(ids) < 2:
            continue
        ids = list(ids)
        rng.shuffle(ids)
        chosen += ids[: min(len(ids) - 1, max(1, round(fraction * len(ids))))]
    return frozenset(chosen)
