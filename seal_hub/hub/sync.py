"""Copying versions between registries: publish a run trained offline to the Hub, or bring a Hub run home.

`sync_repo(src, dst)` walks the source repository's versions oldest first and pushes each one's files to the
destination under the same tag, as a whole version (files the version does not hold are removed there, as they
are absent in the source). A tag the destination already has is checked, not pushed: the same content is
skipped, other content stops the sync with `VersionExistsError` (versions are immutable on both sides). So a
sync is safe to repeat: the second run pushes nothing, and a sync interrupted midway resumes where it stopped.
`sync_namespace` does this for every repository of a namespace (a run's three repositories).

Not covered: deleting versions at the destination, branches other than ``main``, and merging diverged histories.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from seal_hub.hub.backends import registry_for
from seal_hub.hub.registry import HubError, Ref, Registry, check_namespace, with_type

logger = logging.getLogger(__name__)


@dataclass
class SyncReport:
    """What one repository's sync did: versions pushed, versions already there, and how long it took."""

    source: str
    destination: str
    pushed: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def line(self) -> str:
        pushed = ", ".join(self.pushed) or "nothing new"
        return (
            f"{self.source} -> {self.destination}: pushed {pushed}; {len(self.present)} already there "
            f"({self.seconds:.2f} s)"
        )


def sync_repo(src: Ref, dst: Ref, *, source: Registry | None = None, target: Registry | None = None) -> SyncReport:
    """Copy every version of `src` to `dst` in order, with its tag (see the module docstring)."""
    source = source or registry_for(src)
    target = target or registry_for(dst)
    if src.revision or dst.revision:
        raise HubError(f"sync copies whole repositories: drop the revision from {src if src.revision else dst}")
    src = with_type(src, source)
    dst = with_type(dst, target, src.repo_type)
    if dst.repo_type != src.repo_type:
        raise HubError(f"cannot sync the {src.repo_type} repository {src} into a {dst.repo_type} repository {dst}")
    start = time.perf_counter()
    report = SyncReport(str(src), str(dst))
    present = (
        {v.tag: v for v in target.versions(dst.repo_id, dst.repo_type)}
        if target.repo_exists(dst.repo_id, dst.repo_type)
        else {}
    )
    for version in source.versions(src.repo_id, src.repo_type):
        folder = source.download(src.at(version.tag))
        message = version.title or f"{version.tag}"
        target.push(dst.repo_id, dst.repo_type, folder, tag=version.tag, message=message)  # checks existing tags
        (report.present if version.tag in present else report.pushed).append(version.tag)
        logger.info("%s@%s -> %s: %s", src, version.tag, dst, "present" if version.tag in present else "pushed")
    report.seconds = time.perf_counter() - start
    return report


def sync_namespace(
    src_namespace: str,
    dst_namespace: str,
    *,
    source: Registry,
    target: Registry,
) -> list[SyncReport]:
    """Sync every repository of `src_namespace` in `source` to the same names under `dst_namespace` in `target`."""
    check_namespace(src_namespace)
    check_namespace(dst_namespace)
    repos = source.list_repos(src_namespace)
    if not repos:
        raise HubError(f"no repositories under {src_namespace!r} in the {source.backend} registry")
    reports = []
    for repo in repos:
        name = repo.repo_id.split("/")[1]
        src = Ref(repo.repo_id, repo.repo_type, None, source.backend)
        dst = Ref(f"{dst_namespace}/{name}", repo.repo_type, None, target.backend)
        reports.append(sync_repo(src, dst, source=source, target=target))
    return reports
