"""The one way this package writes a file that a crash must never leave half written.

Every record a run, an evaluation, an experiment or a report leaves on disk (JSON records, Markdown tables, Parquet
files, interface snapshots) goes through here: the content is written to a temporary file in the target's own
folder (so the rename cannot cross file systems), flushed to disk, then renamed over the target with `os.replace`,
which is atomic on POSIX and Windows. A reader sees the old file or the new one, never a part; a writer killed
mid-way leaves only a hidden temporary file (`.NAME.*.tmp`, which no reader globs), removed on any error it sees.
The temporary name is unique, so two processes writing the same target cannot clobber each other's half file.

Not covered: directories (a run's `iterations/step_N` folder is built as `step_N.partial` and renamed whole:
`seal_hub.training.run_records`).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def write_with(path: str | Path, write: Callable[[Path], Any]) -> Path:
    """Atomically create or replace `path` with what `write(temporary_path)` writes there (a Parquet writer, say)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    temp = Path(name)
    try:
        write(temp)
        with open(temp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return path


def write_text(path: str | Path, text: str) -> Path:
    """Atomically create or replace `path` with `text` (UTF-8)."""
    return write_with(path, lambda temp: temp.write_text(text, encoding="utf-8"))


def write_json(path: str | Path, data: Any, *, sort_keys: bool = True) -> Path:
    """Atomically write `data` as indented JSON with a final newline."""
    return write_text(path, json.dumps(data, indent=2, sort_keys=sort_keys) + "\n")
