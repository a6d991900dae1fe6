"""Where replayed episodes come from: a published run (local registry or Hub), or a directory on disk.

`open_replay_source(spec, revision)` takes one string and returns a `ReplaySource`:

- ``[local://|hf://]NS/RUN`` (optionally ``@REVISION``): a run published by `seal_hub.hub`. Its
  ``NS/RUN-trajectories`` repository at the revision (default ``main``) is fetched with `seal_hub.hub.fetch`;
  each ``trajectories/iter-<k>.parquet`` (with ``diagnoses/iter-<k>.parquet``) is one iteration. Interface
  versions are the tags of ``NS/RUN-env``, read with `seal_hub.hub.load_interface`.
- a directory holding ``trajectories.parquet`` and ``diagnoses.parquet`` (what ``seal-hub eval`` and
  ``seal-hub rollout`` write): one source called ``evaluation``.
- a training output directory (``iterations/step_<n>/`` folders and ``interfaces/v<k>.json``, see
  `seal_hub.training.run_records`): each step folder is an iteration, each interface file a version.

Design choice: Parquet is read with pyarrow, not `datasets.load_dataset`, because the Space opens an iteration
of a thousand episodes in well under a second that way (`seal_hub.replay.episodes` keeps the table and turns
one row at a time into a `Trajectory`). Every problem a visitor can cause (an unknown run, revision or
version, a corrupt file) raises `ReplayError` with one readable line.

Not covered: filtering and listing episodes (`seal_hub.replay.episodes`), rendering (`seal_hub.replay.chat`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from seal_hub.hub.backends import registry_for
from seal_hub.hub.registry import HubError, Ref
from seal_hub.interface import InterfaceError, InterfaceSnapshot, load_snapshot
from seal_hub.replay.episodes import EpisodeTable, ReplayError, read_iteration
from seal_hub.training.run_records import iteration_folders

EVALUATION = "evaluation"


@dataclass(frozen=True)
class Iteration:
    """One set of episodes: a training iteration or an evaluation, with its two Parquet files."""

    name: str
    trajectories: Path
    diagnoses: Path | None


@dataclass
class ReplaySource:
    """A run or directory opened for replay: its iterations and environment versions, loaded on demand."""

    name: str
    kind: str  # "run" or "directory"
    iterations: dict[str, Iteration]
    revision: str | None = None
    revisions: tuple[str, ...] = ()
    env_ref: Ref | None = None  # the environment repository (runs)
    interface_files: dict[str, Path] = field(default_factory=dict)  # version -> file (directories)
    _tables: dict[str, EpisodeTable] = field(default_factory=dict, repr=False)
    _interfaces: dict[str, InterfaceSnapshot] = field(default_factory=dict, repr=False)
    _versions: tuple[str, ...] | None = field(default=None, repr=False)

    def _published_versions(self) -> tuple[str, ...]:
        """The tags of the run's environment repository (none when it has no such repository)."""
        if self._versions is None:
            found: list[str] = []
            if self.env_ref is not None:
                registry = registry_for(self.env_ref)
                try:
                    if registry.repo_exists(self.env_ref.repo_id, "dataset"):
                        found = [v.tag for v in registry.versions(self.env_ref.repo_id, "dataset")]
                except HubError:
                    found = []
            self._versions = tuple(found)
        return self._versions

    def versions(self) -> tuple[str, ...]:
        """Environment versions this source can show (oldest first); v0 (the null interface) always counts."""
        found = (
            self._published_versions() if self.env_ref is not None else sorted(self.interface_files, key=_version_key)
        )
        return tuple(dict.fromkeys(["v0", *found]))

    def interface(self, version: str) -> InterfaceSnapshot:
        """The snapshot of `version`; `ReplayError` when this source does not have it."""
        if version in self._interfaces:
            return self._interfaces[version]
        if version in self.interface_files:
            try:
                snapshot = load_snapshot(self.interface_files[version])
            except InterfaceError as exc:
                raise ReplayError(str(exc)) from None
        elif self.env_ref is not None and version in self._published_versions():
            from seal_hub.hub import load_interface

            try:
                snapshot = load_interface(self.env_ref.at(version))
            except (HubError, InterfaceError) as exc:
                raise ReplayError(f"environment version {version!r} of {self.name}: {exc}") from None
        elif version == "v0":
            snapshot = InterfaceSnapshot.null()
        else:
            have = ", ".join(self.versions())
            raise ReplayError(f"environment version {version!r} is not in {self.name} (versions: {have})")
        self._interfaces[version] = snapshot
        return snapshot

    def episodes(self, iteration: str) -> EpisodeTable:
        """The episodes of `iteration` (read once, then kept)."""
        if iteration not in self.iterations:
            have = ", ".join(self.iterations) or "none"
            raise ReplayError(f"iteration {iteration!r} is not in {self.name} (iterations: {have})")
        if iteration not in self._tables:
            found = self.iterations[iteration]
            self._tables[iteration] = read_iteration(found.trajectories, found.diagnoses)
        return self._tables[iteration]


def _version_key(version: str) -> tuple[int, str]:
    digits = re.sub(r"\D", "", version)
    return (int(digits) if digits else -1, version)


def _directory(path: Path) -> ReplaySource:
    if (path / "trajectories.parquet").is_file():
        diagnoses = path / "diagnoses.parquet"
        iteration = Iteration(EVALUATION, path / "trajectories.parquet", diagnoses if diagnoses.is_file() else None)
        return ReplaySource(path.name or str(path), "directory", {EVALUATION: iteration})
    steps = [folder / "trajectories.parquet" for folder in iteration_folders(path)]
    steps = [file for file in steps if file.is_file()]
    if not steps:
        raise ReplayError(
            f"{path} holds neither trajectories.parquet (an evaluation) nor iterations/*/trajectories.parquet "
            "(a training run's output directory)"
        )
    iterations = {}
    for file in steps:
        diagnoses = file.with_name("diagnoses.parquet")
        iterations[file.parent.name] = Iteration(file.parent.name, file, diagnoses if diagnoses.is_file() else None)
    interfaces = {p.stem: p for p in sorted((path / "interfaces").glob("*.json"))}
    return ReplaySource(path.name, "directory", iterations, interface_files=interfaces)


def run_ref(spec: str) -> tuple[Ref, Ref]:
    """The trajectories and environment repositories of a run reference ``[scheme://]NS/RUN[@REVISION]``."""
    try:
        ref = Ref.parse(spec)
    except HubError as exc:
        raise ReplayError(f"run {spec!r}: {exc}") from None
    trajectories = Ref(f"{ref.repo_id}-trajectories", "dataset", ref.revision, ref.backend)
    return trajectories, Ref(f"{ref.repo_id}-env", "dataset", None, ref.backend)


def _run(spec: str, revision: str | None) -> ReplaySource:
    trajectories, env = run_ref(spec)
    if revision:
        trajectories = trajectories.at(revision)
    run_name = spec.split("@", 1)[0]
    try:
        registry = registry_for(trajectories)
        if not registry.repo_exists(trajectories.repo_id, "dataset"):
            raise ReplayError(
                f"run {run_name!r}: no repository {trajectories.repo_id} in the {registry.backend} registry "
                "(publish a run with seal-hub train --publish_run NS/RUN)"
            )
        revisions = tuple(v.tag for v in registry.versions(trajectories.repo_id, "dataset"))
        from seal_hub.hub import fetch

        folder = fetch(trajectories)
    except HubError as exc:
        raise ReplayError(f"run {run_name!r}: {exc}") from None
    iterations = {}
    for file in sorted((folder / "trajectories").glob("*.parquet"), key=lambda p: _version_key(p.stem)):
        diagnoses = folder / "diagnoses" / file.name
        iterations[file.stem] = Iteration(file.stem, file, diagnoses if diagnoses.is_file() else None)
    if not iterations:
        raise ReplayError(f"run {run_name!r} at {trajectories.revision or 'main'} holds no trajectories/*.parquet")
    return ReplaySource(
        run_name,
        "run",
        iterations,
        revision=trajectories.revision or "main",
        revisions=("main", *revisions),
        env_ref=env,
    )


def open_replay_source(spec: str, revision: str | None = None) -> ReplaySource:
    """A run reference or a directory (see the module docstring); `revision` overrides one given with ``@``."""
    spec = (spec or "").strip()
    if not spec:
        raise ReplayError("no run given: type a run (NS/RUN, local://NS/RUN, hf://NS/RUN) or a directory")
    path = Path(spec).expanduser()
    if path.is_dir():
        return _directory(path)
    if spec.startswith(("/", ".", "~")):
        raise ReplayError(f"{spec}: no such directory")
    return _run(spec, revision or None)


def default_iteration(source: ReplaySource) -> str:
    """The latest iteration (runs: the highest iter-<k>; directories: the last step or the evaluation)."""
    return list(source.iterations)[-1]
