"""The train/test split of BFCL single-turn: half of every category for training, the other half held out.

`fraction_split` makes it: per category (in `CATEGORIES` order), the category's task ids in BFCL's order,
shuffled by one `random.Random(seed)`, the first `floor(fraction * n)` for training and the rest for testing;
so every category is in both halves (live_relevance's 16 tasks: 8 and 8) and the test half is never smaller.
The package ships the result for seed 0 and fraction 0.5 (`data/split.json`, 1745 train / 1746 test tasks),
which `packaged_split` reads: it is the suite's default for `train` and `test`, the way the multi-turn suite
ships the SEAL paper's split. `split_file: packaged-dev` (`packaged_dev_split`) cuts a dev split from its training
half, for learning curves that leave the test half unread. Regenerate the file (after a bfcl-eval upgrade changes
the tasks) with `python -m seal_hub.envs.bfcl_single.splits > seal_hub/envs/bfcl_single/data/split.json`; a test
holds the shipped file equal to `fraction_split(load_tasks())`.

Not covered: choosing tasks inside a split (`seal_hub.training.held_out` interleaves categories).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from importlib import resources

from seal_hub.envs.bfcl_single.tasks import CATEGORIES
from seal_hub.envs.splits import Split, load_split

DEFAULT_FRACTION = 0.5
DEFAULT_SEED = 0
PACKAGED = "packaged"  # the name of the shipped split wherever a split file is asked for
PACKAGED_DEV = "packaged-dev"  # the shipped split with a dev split cut from its training half
DEV_PER_CATEGORY = 20
DEV_MIN_TRAIN = 80  # a category gives dev tasks only where its training half has at least this many


def fraction_split(tasks: Mapping[str, object], fraction: float = DEFAULT_FRACTION, seed: int = DEFAULT_SEED) -> Split:
    """Per category, a seeded-random `fraction` of its tasks (rounded down) for training, the rest for testing."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must be in (0, 1), got {fraction}")
    rng = random.Random(seed)
    train: list[str] = []
    test: list[str] = []
    for category in CATEGORIES:
        ids = [task_id for task_id, task in tasks.items() if getattr(task, "category", None) == category]
        rng.shuffle(ids)
        cut = int(fraction * len(ids))
        train += ids[:cut]
        test += ids[cut:]
    return Split(tuple(train), tuple(test), source=f"stratified(seed={seed}, fraction={fraction:g})")


def packaged_split(known_ids: set[str] | None = None) -> Split:
    """The split shipped with the package (seed 0, half of every category for training)."""
    with resources.as_file(resources.files("seal_hub.envs.bfcl_single") / "data" / "split.json") as path:
        split = load_split(path, known_ids)
    return Split(split.train, split.test, source="bfcl-single half split (seed 0, shipped)")


def packaged_dev_split(categories: Mapping[str, str], known_ids: set[str] | None = None) -> Split:
    """The shipped split with a dev split for learning curves: the last `DEV_PER_CATEGORY` training tasks of every
    category whose training half has at least `DEV_MIN_TRAIN` (in the shipped order), never trained on; `train` is
    the rest of the half, `test` unchanged. A run that takes the first N training tasks of a category (the demo's
    40) trains on the same tasks as under the plain shipped split. `categories`: task id -> category."""
    packaged = packaged_split(known_ids)
    by_category: dict[str, list[str]] = {}
    for task_id in packaged.train:
        by_category.setdefault(categories.get(task_id, ""), []).append(task_id)
    dev = {t for ids in by_category.values() if len(ids) >= DEV_MIN_TRAIN for t in ids[-DEV_PER_CATEGORY:]}
    train = tuple(t for t in packaged.train if t not in dev)
    return Split(
        train,
        packaged.test,
        source=f"{PACKAGED_DEV}: {packaged.source}",
        dev=tuple(sorted(dev, key=packaged.train.index)),
    )


def split_json(split: Split, fraction: float = DEFAULT_FRACTION, seed: int = DEFAULT_SEED) -> str:
    """The split file's text: `train` and `test` lists, with how they were made."""
    data = {"seed": seed, "fraction": fraction, "train": list(split.train), "test": list(split.test)}
    return json.dumps(data, indent=1) + "\n"


if __name__ == "__main__":  # python -m seal_hub.envs.bfcl_single.splits > seal_hub/envs/bfcl_single/data/split.json
    from seal_hub.envs.bfcl_single.tasks import load_tasks

    print(split_json(fraction_split(load_tasks())), end="")
