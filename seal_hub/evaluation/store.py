"""The evaluation directory: per-task records written as they finish, so an interrupted run resumes.

Layout of ``--output_dir``::

    settings.json          what decides the scores (suite, split, model, adapter, interface, protocol)
    records/<task>.json    one evaluated task's `Trajectory`, written atomically when its episode ends
    results.json / results.md / trajectories.parquet / diagnoses.parquet   written at the end

Every file is written to a temporary name and renamed into place, so a crash leaves either the whole record
or none: a rerun with the same directory reads the records there, runs only the missing tasks, and never
duplicates one. A rerun whose settings differ from those recorded is refused with a one-line error (mixing
two protocols in one score would be silent nonsense). A record that cannot be read (a disk error, an edit) is
named in the error rather than skipped.

Not covered: what the final files contain (`seal_hub.evaluation.results`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from seal_hub.atomic import write_text
from seal_hub.rollout.records import Trajectory

SETTINGS_FILE = "settings.json"
RECORDS_DIR = "records"


class ResumeError(ValueError):
    """The directory holds an evaluation with other settings, or a record that cannot be read."""


def _record_name(task_id: str) -> str:
    return task_id.replace("/", "__") + ".json"


class EvalStore:
    """Reads and writes one evaluation directory."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    @property
    def records_dir(self) -> Path:
        return self.root / RECORDS_DIR

    def open(self, settings: dict[str, Any]) -> None:
        """Record `settings` for a new directory, or check that an existing one was run with the same."""
        path = self.root / SETTINGS_FILE
        if path.is_file():
            try:
                recorded = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ResumeError(f"{path} is unreadable ({exc}); use a new --output_dir directory") from None
            if recorded != settings:
                changed = sorted(k for k in set(recorded) | set(settings) if recorded.get(k) != settings.get(k))
                raise ResumeError(
                    f"{self.root} holds an evaluation with other settings ({', '.join(changed)} differ); "
                    "rerun with the same settings to resume, or use a new --output_dir directory"
                )
            return
        if self.root.exists() and not self.root.is_dir():
            raise ResumeError(f"--output_dir {self.root} exists and is not a directory")
        write_text(path, json.dumps(settings, indent=2, sort_keys=True) + "\n")

    def done(self, task_ids: Iterable[str]) -> dict[str, Trajectory]:
        """The records already written for `task_ids` (those missing are simply absent)."""
        found = {}
        for task_id in task_ids:
            path = self.records_dir / _record_name(task_id)
            if not path.is_file():
                continue
            try:
                record = Trajectory.model_validate_json(path.read_bytes())
            except (OSError, ValidationError) as exc:
                first = str(exc).splitlines()[0]
                raise ResumeError(
                    f"{path} is not a readable task record ({first}); delete it to rerun that task"
                ) from None
            if record.task_id != task_id:
                raise ResumeError(f"{path} holds task {record.task_id!r}, not {task_id!r}; delete it to rerun it")
            found[task_id] = record
        return found

    def add(self, trajectory: Trajectory) -> None:
        write_text(self.records_dir / _record_name(trajectory.task_id), trajectory.model_dump_json())
