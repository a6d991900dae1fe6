"""Train/test splits of the BFCL tasks: read from a file, or made deterministically from a seed.

A split file is JSON with `train` and `test` lists of task ids (`seal_hub.envs.splits`, the format every suite
reads). The SEAL paper's 400/400 split has that shape and ships with the package (`paper_split()`, the default
everywhere). `stratified_split` makes one of our own: per category, the task ids shuffled by a seeded
`random.Random` and the first `train_per_category` taken for training, the rest for testing.
"""

from __future__ import annotations

import random
from importlib import resources
from pathlib import Path

from seal_hub.envs.bfcl.tasks import CATEGORIES, Task
from seal_hub.envs.splits import Split, SplitError, load_split

__all__ = ["PAPER_SPLIT", "Split", "SplitError", "load_split", "paper_split", "resolve_split", "stratified_split"]


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
