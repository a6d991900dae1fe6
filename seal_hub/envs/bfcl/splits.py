"""Train/test splits of the BFCL tasks: read from a file, or made deterministically from a seed.

A split file is JSON with `train` and `test` lists of task ids. The SEAL paper's 400/400 split has that shape
and ships with the package (`paper_split()`, the default everywhere). `stratified_split` makes one of our
own: per category, the task ids shuffled by a seeded `random.Random` and the first `train_per_category` taken
for training, the rest for testing.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from seal_hub.envs.bfcl.tasks import CATEGORIES, Task


class SplitError(ValueError):
    """A split file that cannot be used; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Split:
    train: tuple[str, ...]
    test: tuple[str, ...]
    source: str = "stratified"

    def ids(self, name: str) -> tuple[str, ...]:
        if name == "train":
            return self.train
        if name == "test":
            return self.test
        if name == "all":
            return self.train + self.test
        raise ValueError(f"unknown split {name!r}; choose train, test or all")

    def to_json(self) -> str:
        return json.dumps({"train": list(self.train), "test": list(self.test)}, indent=2)


def load_split(path: str | Path, known_ids: set[str] | None = None) -> Split:
    """A split file; with `known_ids`, every id must be one of them. Errors name the file and the field."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SplitError(f"split file {path} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SplitError(f"split file {path} is not readable JSON: {exc}") from None
    if not isinstance(data, dict):
        raise SplitError(f"split file {path}: expected an object with 'train' and 'test' lists")
    parts = {}
    for name in ("train", "test"):
        ids = data.get(name)
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise SplitError(f"split file {path}: field {name!r} must be a list of task ids")
        if len(set(ids)) != len(ids):
            raise SplitError(f"split file {path}: field {name!r} repeats task ids")
        if known_ids is not None and (unknown := [i for i in ids if i not in known_ids]):
            raise SplitError(f"split file {path}: field {name!r} has unknown task ids, e.g. {unknown[:3]}")
        parts[name] = tuple(ids)
    overlap = set(parts["train"]) & set(parts["test"])
    if overlap:
        raise SplitError(
            f"split file {path}: {len(overlap)} ids are in both train and test, e.g. {sorted(overlap)[:3]}"
        )
    return Split(parts["train"], parts["test"], source=str(path))


PAPER_SPLIT = "paper"  # the name that selects the shipped split wherever a split file is asked for


def paper_split(known_ids: set[str] | None = None) -> Split:
    """The SEAL paper's 400/400 split of the 800 BFCL multi-turn tasks (seed 0), shipped with the package."""
    with resources.as_file(resources.files("seal_hub.envs.bfcl") / "data" / "paper_split.json") as path:
        split = load_split(path, known_ids)
    return Split(split.train, split.test, source="SEAL paper (bfcl_400_split.json)")


def resolve_split(
    split_file: str | Path | None,
    known_ids: set[str] | None = None,
    seed: int = 0,
    tasks: dict[str, Task] | None = None,
) -> Split:
    """A split by file path, `"paper"` (also the default, None) for the shipped paper split, or `"stratified"`
    for our seeded stratified split (of `tasks`, else of all BFCL multi-turn tasks)."""
    if split_file is None or str(split_file) == PAPER_SPLIT:
        return paper_split(known_ids)
    if str(split_file) == "stratified":
        from seal_hub.envs.bfcl.tasks import load_tasks

        return stratified_split(tasks if tasks is not None else load_tasks(), seed=seed)
    return load_split(split_file, known_ids)


def stratified_split(tasks: dict[str, Task], train_per_category: int = 100, seed: int = 0) -> Split:
    """Per category, `train_per_category` seeded-random tasks for training and the rest for testing."""
    rng = random.Random(seed)
    train: list[str] = []
    test: list[str] = []
    for category in CATEGORIES:
        ids = [task_id for task_id, task in tasks.items() if task.category == category]
        if not ids:
            continue
        if train_per_category > len(ids):
            raise ValueError(f"train_per_category={train_per_category} but {category} has only {len(ids)} tasks")
        rng.shuffle(ids)
        train += ids[:train_per_category]
        test += ids[train_per_category:]
    return Split(tuple(train), tuple(test), source=f"stratified(seed={seed}, train_per_category={train_per_category})")
