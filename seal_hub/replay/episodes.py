"""The episodes of one iteration: a light index for browsing and filtering, full records one at a time.

`read_iteration(trajectories, diagnoses)` reads the two Parquet files with pyarrow. The index
(`EpisodeSummary`: task id, category, rollout, environment version, reward, per-turn labels) holds only small
columns; `EpisodeTable.trajectory(i)` turns a single row into a `seal_hub.rollout.records.Trajectory`, leaving
the token columns (ids, mask, log-probabilities: what the trainer needs, not a viewer) empty. That keeps opening
an iteration of a thousand episodes well under a second.

`EpisodeFilter` selects by failure label, category, passed/failed and a task-id substring; `tasks` and
`rollouts` list what the browse dropdowns offer. Labels come from the diagnoses file; episodes without one
(an evaluation written without diagnoses) get ``None`` labels and are still browsable.

Not covered: where the files come from (`seal_hub.replay.replay_source`), rendering (`seal_hub.replay.chat`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from seal_hub.rollout.records import FEATURES, Trajectory

TOKEN_COLUMNS = ("token_ids", "token_mask", "logprobs")
_INDEX_COLUMNS = ("task_id", "category", "rollout_index", "interface_version", "reward", "passed", "num_steps")
ALL = "all"


class ReplayError(ValueError):
    """Something a visitor asked for cannot be shown (unknown run, revision, version; unreadable file)."""


@dataclass(frozen=True)
class EpisodeSummary:
    """One row of the browse index."""

    row: int
    task_id: str
    category: str
    rollout_index: int
    interface_version: str
    reward: float
    passed: bool
    num_steps: int
    labels: tuple[str | None, ...] = ()  # one per user turn; None where no label (never verified, no diagnoses)
    weight: float | None = None

    @property
    def key(self) -> str:
        return f"{self.task_id}#{self.rollout_index}"


@dataclass(frozen=True)
class EpisodeFilter:
    """Which episodes to list; empty or ``"all"`` fields match everything."""

    label: str = ALL
    category: str = ALL
    outcome: str = ALL  # "all", "passed", "failed"
    search: str = ""

    def __post_init__(self) -> None:
        if self.outcome not in (ALL, "passed", "failed"):
            raise ValueError(f"outcome={self.outcome!r}: use 'all', 'passed' or 'failed'")

    def matches(self, episode: EpisodeSummary) -> bool:
        if self.label not in ("", ALL) and self.label not in episode.labels:
            return False
        if self.category not in ("", ALL) and episode.category != self.category:
            return False
        if self.outcome != ALL and episode.passed != (self.outcome == "passed"):
            return False
        return self.search.strip().lower() in episode.task_id.lower()


def _read(path: Path, columns: list[str] | None = None) -> pa.Table:
    if not path.is_file():
        raise ReplayError(f"{path.name}: no such file")
    try:
        return pq.read_table(path, columns=columns)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise ReplayError(f"{path.name} is not a readable Parquet file ({str(exc).splitlines()[0]})") from None


@dataclass
class EpisodeTable:
    """The episodes of one iteration: `summaries` in file order, and their full records on demand."""

    table: pa.Table
    summaries: list[EpisodeSummary]
    _by_key: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._by_key = {s.key: s.row for s in self.summaries}

    def __len__(self) -> int:
        return len(self.summaries)

    def trajectory(self, row: int) -> Trajectory:
        """The full record of row `row` (token columns left empty)."""
        record = self.table.slice(row, 1).to_pylist()[0]
        return Trajectory.model_validate(record | {name: [] for name in TOKEN_COLUMNS})

    def find(self, task_id: str, rollout_index: int = 0) -> EpisodeSummary | None:
        row = self._by_key.get(f"{task_id}#{rollout_index}")
        return None if row is None else self.summaries[row]

    def select(self, chosen: EpisodeFilter) -> list[EpisodeSummary]:
        return [s for s in self.summaries if chosen.matches(s)]

    def tasks(self, chosen: EpisodeFilter | None = None) -> list[str]:
        """Task ids with at least one matching episode, in file order."""
        return list(dict.fromkeys(s.task_id for s in self.select(chosen or EpisodeFilter())))

    def rollouts(self, task_id: str, chosen: EpisodeFilter | None = None) -> list[int]:
        return [s.rollout_index for s in self.select(chosen or EpisodeFilter()) if s.task_id == task_id]

    def categories(self) -> list[str]:
        return sorted({s.category for s in self.summaries})

    def labels(self) -> list[str]:
        return sorted({label for s in self.summaries for label in s.labels if label is not None})

    def versions(self) -> list[str]:
        return list(dict.fromkeys(s.interface_version for s in self.summaries))


def read_iteration(trajectories: Path, diagnoses: Path | None = None) -> EpisodeTable:
    """Read an iteration's trajectories (all but the token columns) and, when given, its diagnoses."""
    schema = _schema(trajectories)
    missing = [name for name in _INDEX_COLUMNS if name not in schema.names]
    if missing:
        raise ReplayError(f"{trajectories.name} is not a trajectory file: no column(s) {', '.join(missing)}")
    wanted = [name for name in FEATURES if name not in TOKEN_COLUMNS and name in schema.names]
    table = _read(trajectories, wanted)
    index = table.select(list(_INDEX_COLUMNS)).to_pydict()
    count = table.num_rows
    labels: list[tuple[str | None, ...]] = [()] * count
    weights: list[float | None] = [None] * count
    if diagnoses is not None:
        rows = _read(diagnoses, ["task_id", "rollout_index", "labels", "weight"]).to_pydict()
        by_key = {
            f"{task}#{rollout}": (tuple(found or ()), weight)
            for task, rollout, found, weight in zip(
                rows["task_id"], rows["rollout_index"], rows["labels"], rows["weight"], strict=True
            )
        }
        positional = rows["task_id"] == index["task_id"] and rows["rollout_index"] == index["rollout_index"]
        for i in range(count):
            if positional:
                labels[i], weights[i] = tuple(rows["labels"][i] or ()), rows["weight"][i]
            elif (found := by_key.get(f"{index['task_id'][i]}#{index['rollout_index'][i]}")) is not None:
                labels[i], weights[i] = found
    summaries = [
        EpisodeSummary(
            row=i,
            task_id=index["task_id"][i],
            category=index["category"][i],
            rollout_index=index["rollout_index"][i],
            interface_version=index["interface_version"][i],
            reward=index["reward"][i],
            passed=index["passed"][i],
            num_steps=index["num_steps"][i],
            labels=labels[i],
            weight=weights[i],
        )
        for i in range(count)
    ]
    return EpisodeTable(table, summaries)


def _schema(path: Path) -> pa.Schema:
    if not path.is_file():
        raise ReplayError(f"{path.name}: no such file")
    try:
        return pq.read_schema(path)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise ReplayError(f"{path.name} is not a readable Parquet file ({str(exc).splitlines()[0]})") from None
