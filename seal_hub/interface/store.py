"""A local store of interface snapshots: a plain directory of `<version>.json` files.

The store keeps the lineage honest: a snapshot goes in only if its parent is already there (the null
interface, with no parent, always may), a stored version is immutable (putting the same content again is a
no-op, other content under the same version is refused), and every read validates the file (JSON, labels,
content hash, parent known, version matching the file name) through `seal_hub.interface.snapshot.load_snapshot`.
Writes are atomic (`InterfaceSnapshot.save`). `lineage` walks a snapshot's parents, root first.

Not covered: the Hugging Face Hub registry and `repo@version` references (`seal_hub.hub`), and concurrent
writers to one directory (one training run owns its store).
"""

from __future__ import annotations

import re
from pathlib import Path

from seal_hub.interface.snapshot import InterfaceError, InterfaceSnapshot, load_snapshot


def _version_key(version: str) -> tuple[int, int, str]:
    """v2 before v10; ids that are not `v<number>` after them, alphabetically."""
    match = re.fullmatch(r"v(\d+)", version)
    return (0, int(match.group(1)), "") if match else (1, 0, version)


class SnapshotStore:
    """A directory of `<version>.json` snapshots; a snapshot's parent must already be in it."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, version: str) -> Path:
        return self.root / f"{version}.json"

    def versions(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted((p.stem for p in self.root.glob("*.json")), key=_version_key)

    def __contains__(self, version: str) -> bool:
        return self.path(version).is_file()

    def get(self, version: str) -> InterfaceSnapshot:
        """The stored snapshot of `version`, validated; `InterfaceError` naming the file on any problem."""
        if version not in self:
            have = ", ".join(self.versions()) or "none"
            raise InterfaceError(f"interface store {self.root}: no version {version!r} (have: {have})")
        path = self.path(version)
        snapshot = load_snapshot(path, known_versions=set(self.versions()))
        if snapshot.version != version:
            raise InterfaceError(
                f"interface snapshot {path}: field 'version': {snapshot.version!r} does not match the file name"
            )
        return snapshot

    def put(self, snapshot: InterfaceSnapshot) -> Path:
        """Store a snapshot (idempotent for identical content); versions are immutable once stored."""
        if snapshot.parent is not None and snapshot.parent not in self:
            raise InterfaceError(
                f"interface store {self.root}: parent {snapshot.parent!r} of {snapshot.version!r} is not stored; "
                "put the parent first"
            )
        if snapshot.version in self:
            stored = self.get(snapshot.version)
            if stored.content_hash == snapshot.content_hash:
                return self.path(snapshot.version)
            raise InterfaceError(
                f"interface store {self.root}: version {snapshot.version!r} already holds other content "
                f"({stored.content_hash[:12]}...); snapshots are immutable, give the new one a new version"
            )
        self.root.mkdir(parents=True, exist_ok=True)
        return snapshot.save(self.path(snapshot.version))

    def lineage(self, snapshot: InterfaceSnapshot, stored_only: bool = False) -> list[InterfaceSnapshot]:
        """`snapshot` and its ancestors, the root first. A missing ancestor is an `InterfaceError`, or with
        `stored_only=True` where the walk stops (a run started from a snapshot whose ancestors live elsewhere)."""
        chain = [snapshot]
        while chain[-1].parent is not None:
            if stored_only and chain[-1].parent not in self:
                break
            chain.append(self.get(chain[-1].parent))
        return chain[::-1]
