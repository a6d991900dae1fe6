"""What each view of the replay Space shows, as plain data: the Space's callbacks only move it into widgets.

A `Viewer` keeps the sources it opened (by run spec and revision; read-only, so visitors can share them) and the
BFCL suite (for the tools a task shows). Its methods answer one view each:

- `browse(selection)`: the choices of the browse dropdowns (revisions, iterations, versions, filters, tasks,
  rollouts) for a `Selection`, with the selection repaired to valid values;
- `replay(selection, frame)`: the chat up to a frame, the frame bounds, the summary line and what the agent
  was shown (under the selected environment version, by default the one the episode ran under);
- `compare(a, b)`: the same task in two selections (another iteration, revision, run or evaluation
  directory): the turn alignment and the interface diff.

`Selection.from_query` / `Selection.query` read and write the deep-link query parameters (``run``, ``rev``,
``iter``, ``version``, ``task``, ``rollout``, ``turn``, and ``b_run``, ``b_rev``, ``b_iter``, ``b_rollout`` for
the side-by-side view). Every problem a visitor can cause raises `ReplayError` with a readable message (a task the
iteration does not hold: `MissingTask`, so a deep link can open the run anyway).

Not covered: widgets and events (`seal_hub.replay.space_app`), live episodes (`seal_hub.replay.live`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlencode

from seal_hub.defaults import DEFAULT_SUITE
from seal_hub.replay.chat import ReplayView, clamp, render_episode
from seal_hub.replay.compare import align, alignment_markdown, interface_changes, shown_diff_html
from seal_hub.replay.episodes import ALL, EpisodeFilter, EpisodeSummary, EpisodeTable, ReplayError
from seal_hub.replay.replay_source import ReplaySource, default_iteration, open_replay_source
from seal_hub.replay.shown import agent_view, task_tools

EPISODE_VERSION = "episode's own"
MAX_SOURCES = 8


class MissingTask(ReplayError):
    """A selection names a task the chosen iteration does not hold (a deep link from an older version of a run)."""


@dataclass(frozen=True)
class Selection:
    """One episode (and how to list its neighbours): what a deep link names."""

    run: str = ""
    revision: str = ""
    iteration: str = ""
    version: str = EPISODE_VERSION
    task: str = ""
    rollout: int = 0
    turn: int | None = None
    label: str = ALL
    category: str = ALL
    outcome: str = ALL
    search: str = ""

    @property
    def filter(self) -> EpisodeFilter:
        return EpisodeFilter(self.label, self.category, self.outcome, self.search)

    @classmethod
    def from_query(cls, params: Mapping[str, str], prefix: str = "", default_run: str = "") -> Selection:
        """The selection a URL's query parameters name (`prefix` ``b_`` reads the side-by-side episode)."""

        def get(name: str, default: str = "") -> str:
            return str(params.get(prefix + name, default) or default).strip()

        def number(name: str) -> int | None:
            value = get(name)
            if not value:
                return None
            try:
                return int(value)
            except ValueError:
                raise ReplayError(f"query parameter {prefix + name}={value!r} is not a number") from None

        return cls(
            run=get("run", default_run),
            revision=get("rev"),
            iteration=get("iter"),
            version=get("version", EPISODE_VERSION),
            task=get("task"),
            rollout=number("rollout") or 0,
            turn=None if (turn := number("turn")) is None else max(turn - 1, 0),
        )

    def query(self, prefix: str = "") -> dict[str, str]:
        pairs = {
            "run": self.run,
            "rev": self.revision,
            "iter": self.iteration,
            "version": "" if self.version == EPISODE_VERSION else self.version,
            "task": self.task,
            "rollout": str(self.rollout) if self.task else "",
            "turn": "" if self.turn is None else str(self.turn + 1),
        }
        return {prefix + key: value for key, value in pairs.items() if value}


def deep_link(a: Selection, b: Selection | None = None, base: str = "") -> str:
    """A URL (``base`` plus query) that opens `a`, and `b` beside it when given."""
    params = a.query() | (b.query("b_") if b is not None else {})
    return f"{base}?{urlencode(params)}"


@dataclass(frozen=True)
class Browse:
    selection: Selection
    revisions: list[str]
    iterations: list[str]
    versions: list[str]
    labels: list[str]
    categories: list[str]
    tasks: list[str]
    rollouts: list[int]
    episodes: int  # in the iteration
    matching: int  # after the filters


@dataclass(frozen=True)
class Replay:
    selection: Selection
    view: ReplayView
    frame: int
    shown_markdown: str
    summary: EpisodeSummary
    tools_json: str = "[]"  # the tools as rendered under the shown version

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.view.at(self.frame)

    @property
    def position(self) -> str:
        turn = max((t for t, f in enumerate(self.view.turn_frames) if f <= self.frame), default=0)
        return f"step {self.frame} of {self.view.last_frame} · turn {turn + 1} of {len(self.view.turn_frames)}"


@dataclass(frozen=True)
class Comparison:
    alignment: str
    changes: list[str]
    diff_html: str
    title_a: str
    title_b: str


@dataclass
class Viewer:
    """Opened sources (shared, read-only, at most `MAX_SOURCES`) and the suite; one per Space process."""

    default_run: str = ""
    _sources: dict[tuple[str, str], ReplaySource] = field(default_factory=dict)
    _suites: dict[str, Any] = field(default_factory=dict)  # by name, each loaded on first use
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def suite(self) -> Any:
        """BFCL multi-turn: the suite of a run whose snapshots name none other."""
        return self.suite_for(DEFAULT_SUITE)

    def add_suite(self, suite: Any) -> None:
        """Share a suite loaded already (by the Space's caller, a benchmark, a test) instead of loading it again."""
        with self._lock:
            self._suites[suite.name] = suite

    @property
    def loaded_suites(self) -> tuple[str, ...]:
        """The names of the suites this Viewer holds (shared with `add_suite` or loaded on first use)."""
        with self._lock:
            return tuple(self._suites)

    def suite_for(self, name: str) -> Any:
        """The suite a run's episodes come from (its interface snapshots name it): their tools are its tasks'."""
        with self._lock:
            if name not in self._suites:
                from seal_hub.envs.builtin import load_suite

                self._suites[name] = load_suite(name)
            return self._suites[name]

    def source(self, selection: Selection) -> ReplaySource:
        key = (selection.run or self.default_run, selection.revision)
        with self._lock:  # visitors open sources concurrently: one open per key, one eviction at a time
            if key not in self._sources:
                if len(self._sources) >= MAX_SOURCES:
                    self._sources.pop(next(iter(self._sources)))
                self._sources[key] = open_replay_source(key[0], key[1] or None)
            return self._sources[key]

    def _table(self, selection: Selection) -> tuple[ReplaySource, Selection, EpisodeTable]:
        source = self.source(selection)
        iteration = selection.iteration or default_iteration(source)
        if iteration not in source.iterations:
            have = ", ".join(source.iterations)
            raise ReplayError(f"iteration {iteration!r} is not in {source.name} (iterations: {have})")
        selection = replace(selection, run=selection.run or self.default_run, iteration=iteration)
        return source, selection, source.episodes(iteration)

    def browse(self, selection: Selection) -> Browse:
        """The dropdown choices for `selection`, and the selection with an existing task and rollout."""
        source, selection, table = self._table(selection)
        chosen = selection.filter
        tasks = table.tasks(chosen)
        task = selection.task if selection.task in tasks else (tasks[0] if tasks else "")
        if selection.task and selection.task not in table.tasks():
            raise MissingTask(f"task {selection.task!r} is not in {source.name} {selection.iteration}")
        rollouts = table.rollouts(task, chosen) if task else []
        rollout = selection.rollout if selection.rollout in rollouts else (rollouts[0] if rollouts else 0)
        versions = [EPISODE_VERSION, *source.versions()]
        version = selection.version if selection.version in versions else EPISODE_VERSION
        if selection.version not in versions:
            have = ", ".join(source.versions())
            raise ReplayError(f"environment version {selection.version!r} is not in {source.name} (versions: {have})")
        return Browse(
            selection=replace(selection, task=task, rollout=rollout, version=version),
            revisions=list(source.revisions),
            iterations=list(source.iterations),
            versions=versions,
            labels=[ALL, *table.labels()],
            categories=[ALL, *table.categories()],
            tasks=tasks,
            rollouts=rollouts,
            episodes=len(table),
            matching=len(table.select(chosen)),
        )

    def episode(self, selection: Selection) -> tuple[ReplaySource, Selection, EpisodeSummary, Any]:
        source, selection, table = self._table(selection)
        found = table.find(selection.task, selection.rollout)
        if found is None:
            raise ReplayError(
                f"no rollout {selection.rollout} of task {selection.task!r} in {source.name} {selection.iteration}"
            )
        return source, selection, found, table.trajectory(found.row)

    def replay(self, selection: Selection, frame: int | None = None) -> Replay:
        """The episode at `frame` (default: the start of `selection.turn`, else the episode whole: its last frame,
        the agent's answer shown)."""
        source, selection, summary, trajectory = self.episode(selection)
        view = render_episode(trajectory, summary.labels)
        if frame is None:
            frame = view.frame_of_turn(selection.turn) if selection.turn is not None else view.last_frame
        frame = clamp(frame, view.last_frame)
        version = trajectory.interface_version if selection.version == EPISODE_VERSION else selection.version
        snapshot = source.interface(version)
        if snapshot.user_environment is not None:  # a user's environment: the schemas its version recorded (the
            tools = list(snapshot.user_environment.tools)  # Space never imports a user's class)
        else:
            tools = self._tools(snapshot.suite, trajectory.task_id)
        shown = agent_view(snapshot, tools, trajectory, frame)
        return Replay(selection, view, frame, shown.markdown(), summary, shown.tools_json())

    def _tools(self, suite: str, task_id: str) -> list[dict[str, Any]]:
        """The tools `task_id` offers at its first turn; none for a task its suite does not have (or a suite
        that cannot load here)."""
        from seal_hub.envs.suite import SuiteError

        try:
            return task_tools(self.suite_for(suite), task_id)
        except (KeyError, SuiteError):
            return []

    def compare(self, a: Selection, b: Selection) -> Comparison:
        """Selection `b`'s rollout of `a`'s task beside `a`'s: turns aligned, interfaces diffed."""
        source_a, a, summary_a, trajectory_a = self.episode(self.browse(a).selection)
        b = replace(b, task=a.task, run=b.run or a.run)
        source_b, b, summary_b, trajectory_b = self.episode(b)
        title_a = f"A: {source_a.name} {a.iteration} ({trajectory_a.interface_version})"
        title_b = f"B: {source_b.name} {b.iteration} ({trajectory_b.interface_version})"
        pairs = align(trajectory_a, summary_a.labels, trajectory_b, summary_b.labels)
        snapshot_a = source_a.interface(trajectory_a.interface_version)
        snapshot_b = source_b.interface(trajectory_b.interface_version)
        tools = self._tools(snapshot_a.suite, trajectory_a.task_id)
        return Comparison(
            alignment=alignment_markdown(pairs, title_a, title_b),
            changes=interface_changes(snapshot_a, snapshot_b),
            diff_html=shown_diff_html(snapshot_a, snapshot_b, tools),
            title_a=title_a,
            title_b=title_b,
        )
