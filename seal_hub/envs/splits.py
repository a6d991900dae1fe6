"""Train/test splits: the record (`Split`) and the split file every suite reads, one format for all.

A split file is JSON with `train` and `test` lists of task ids (the SEAL paper's 400/400 split of BFCL
multi-turn has that shape; bfcl-single ships one too), and optionally a `dev` list: tasks cut from the training
side and never trained on, what learning curves and the choice of settings read so that `test` is read once.
`load_split` reads one and checks it: with `known_ids`, every id must be one of them; no id twice, none in two
lists; a mistake is a `SplitError` that names the file and the field. `Split.ids` answers `train`, `test`, `dev`
(where the file has one) and `all`.

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
    dev: tuple[str, ...] = ()  # cut from the training side, never trained on: what learning curves read

    def ids(self, name: str) -> tuple[str, ...]:
        if name == "train":
            return self.train
        if name == "test":
            return self.test
        if name == "dev" and self.dev:
            return self.dev
        if name == "all":
            return self.train + self.dev + self.test
        raise ValueError(f"unknown split {name!r}; choose train, test{', dev' if self.dev else ''} or all")

    def to_json(self) -> str:
        lists = {"train": list(self.train), "test": list(self.test)} | ({"dev": list(self.dev)} if self.dev else {})
        return json.dumps(lists, indent=2)


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
    for name in ("train", "test", "dev"):
        ids = data.get(name, [] if name == "dev" else None)  # dev: optional
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise SplitError(f"split file {path}: field {name!r} must be a list of task ids")
        if len(set(ids)) != len(ids):
            raise SplitError(f"split file {path}: field {name!r} repeats task ids")
        if known_ids is not None and (unknown := [i for i in ids if i not in known_ids]):
            raise SplitError(f"split file {path}: field {name!r} has unknown task ids, e.g. {unknown[:3]}")
        parts[name] = tuple(ids)
    for one, other in (("train", "test"), ("train", "dev"), ("dev", "test")):
        overlap = set(parts[one]) & set(parts[other])
        if overlap:
            raise SplitError(
                f"split file {path}: {len(overlap)} ids are in both {one} and {other}, e.g. {sorted(overlap)[:3]}"
            )
    return Split(parts["train"], parts["test"], source=str(path), dev=parts["dev"])
