"""Train/test splits: the record (`Split`) and the split file every suite reads, one format for all.

A split file is JSON with `train` and `test` lists of task ids (the SEAL paper's 400/400 split of BFCL
multi-turn has that shape; bfcl-single ships one too). `load_split` reads one and checks it: with `known_ids`,
every id must be one of them; no id twice, none in both halves; a mistake is a `SplitError` that names the file
and the field. `Split.ids` answers `train`, `test` and `all`.

Not covered: which split a suite uses by default or how it makes its own (each suite's package: BFCL's paper and
stratified splits, bfcl-single's halves).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


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
