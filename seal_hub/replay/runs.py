"""The runs a replay Space offers in its run list, and the one it opens when it is given none.

- deployed (a Hub Space, or ``seal-hub space --public``): the deployed run, then the runs (``NS/RUN``) of its
  allowlist; a namespace on the allowlist (``NS``) is not listed run by run, a visitor types its runs;
- local (``seal-hub space``): the given run, then every run of the local registry (a ``-trajectories`` dataset with
  at least one version), newest first, so the page opens the newest when no run is given.

"Newest" is the time the run's trajectories last took a version (its tags' or branch's ref on disk), so the demo
just trained comes first. A run is named as `seal-hub space --run` takes it: ``NS/RUN`` where the local registry is
the default one, else ``local://NS/RUN``.

Not covered: listing the Hub (a Hub namespace may hold thousands of repositories; a deployed Space lists what its
deploy pinned), checking a visitor's choice (`seal_hub.replay.access`).
"""

from __future__ import annotations

from pathlib import Path

from seal_hub.hub.registry import HubError, configured_backend
from seal_hub.replay.access import Access

TRAJECTORIES = "-trajectories"


def offered_runs(run: str, access: Access, registry: object | None = None) -> list[str]:
    """The runs to list, the one to open first at the top (`run`, else the newest local run); `registry`: the
    local registry to list (default: the configured one)."""
    others = [name for name in access.runs if "/" in name] if access.public else local_runs(registry)
    listed = [run, *others]
    return list(dict.fromkeys(name for name in listed if name))


def local_runs(registry: object | None = None) -> list[str]:
    """The local registry's runs, newest first; none when it cannot be read (the page still takes a typed run)."""
    from seal_hub.hub.local import LocalRegistry

    local = registry if isinstance(registry, LocalRegistry) else LocalRegistry()
    try:
        scheme = "" if configured_backend() == "local" else "local://"
        listed = local.list_repos()
    except (HubError, OSError):
        return []
    found = [
        (_published_at(local.path(entry.repo_id, "dataset")), entry.repo_id.removesuffix(TRAJECTORIES))
        for entry in listed
        if entry.repo_type == "dataset" and entry.repo_id.endswith(TRAJECTORIES) and entry.versions
    ]
    return [f"{scheme}{run}" for _, run in sorted(found, key=lambda pair: (-pair[0], pair[1]))]


def _published_at(repo: Path) -> float:
    """When the bare repository `repo` last took a version: the newest of its ref files (tags, branch, packed)."""
    refs = [repo / "packed-refs", *(repo / "refs").rglob("*")]
    return max((path.stat().st_mtime for path in refs if path.is_file()), default=0.0)
