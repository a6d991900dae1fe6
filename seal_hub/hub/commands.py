"""`seal-hub hub list|show|pull|sync`: the registry from the command line.

- ``list [WHERE]``: repositories and their versions. WHERE is ``local://`` (the default: the whole local registry),
  ``local://NAMESPACE``, or ``hf://NAMESPACE``.
- ``show REF``: a repository's versions, or, with ``@revision``, that revision's commit, files and card metadata.
- ``pull REF [--to DIR]``: download a revision and print the folder (copied to DIR when given).
- ``sync SRC DST``: copy every version, in order, with its tags; SRC and DST are repositories
  (``local://alice/run1-env hf://alice/run1-env``) or namespaces (``local://alice hf://alice``). Safe to repeat.

Handlers return the exit code; `HubError`s (a `ValueError`) reach `seal_hub.cli.main`, which prints them as one
line with exit code 2. Not covered: deleting repositories or versions, and `seal-hub interface show|diff`
(`seal_hub.interface.commands`).
"""

from __future__ import annotations

import argparse
import shutil
from dataclasses import replace
from pathlib import Path

from seal_hub.hub.backends import get_registry, registry_for
from seal_hub.hub.registry import SCHEMES, Backend, HubError, Ref, with_type


def _split_where(text: str) -> tuple[Backend | None, str]:
    for scheme, backend in SCHEMES.items():
        if text.startswith(scheme):
            return backend, text[len(scheme) :].strip("/")
    return None, text.strip("/")


def _list(args: argparse.Namespace) -> int:
    backend, namespace = _split_where(args.where)
    registry = get_registry(backend)
    repos = registry.list_repos(namespace or None)
    where = getattr(registry, "root", None) or getattr(registry, "endpoint", "")
    if not repos:
        print(f"no repositories in the {registry.backend} registry ({where})")
        return 0
    print(f"{registry.backend} registry ({where}): {len(repos)} repositories")
    for repo in repos:
        tags = " ".join(v.tag for v in repo.versions) or "(no versions)"
        print(f"{repo.repo_type:<8} {repo.repo_id:<40} {len(repo.versions):>3} version(s): {tags}")
    return 0


def _show(args: argparse.Namespace) -> int:
    from seal_hub.hub.cards import card_metadata

    ref = Ref.parse(args.ref)
    registry = registry_for(ref)
    ref = replace(with_type(ref, registry), backend=registry.backend)
    versions = registry.versions(ref.repo_id, ref.repo_type)
    if ref.revision is None:
        print(f"{ref}: {len(versions)} version(s), oldest first")
        for version in versions:
            print(f"  {version.tag:<12} {version.commit[:12]}  {version.title}")
        if not versions:
            return 0
        ref = ref.at(versions[-1].tag)
    commit = registry.resolve(ref)
    folder = registry.download(ref)
    tags = [v.tag for v in versions if v.commit == commit]
    print(f"{ref}: commit {commit}" + (f" (tags: {', '.join(tags)})" if tags else ""))
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        print(f"  {path.relative_to(folder).as_posix():<50} {path.stat().st_size:>10} bytes")
    readme = folder / "README.md"
    if readme.is_file():
        metadata = card_metadata(readme.read_text(encoding="utf-8"))
        for key in ("base_model", "library_name", "tags", "datasets", "seal"):
            if key in metadata:
                print(f"  card {key}: {metadata[key]}")
    return 0


def _pull(args: argparse.Namespace) -> int:
    from seal_hub.hub.loading import fetch

    folder = fetch(args.ref)
    if args.to is not None:
        target = Path(args.to)
        if target.exists() and any(target.iterdir()):
            raise HubError(f"--to {target}: the folder exists and is not empty; give a new or empty folder")
        shutil.copytree(folder, target, dirs_exist_ok=True)
        folder = target
    print(folder)
    return 0


def _sync(args: argparse.Namespace) -> int:
    from seal_hub.hub.sync import sync_namespace, sync_repo

    src_backend, src_rest = _split_where(args.src)
    dst_backend, dst_rest = _split_where(args.dst)
    if "/" not in src_rest.split("@")[0].removeprefix("models/").removeprefix("datasets/"):
        if "/" in dst_rest:
            raise HubError(
                f"SRC {args.src!r} is a namespace, so DST must be one too (e.g. hf://alice), not {args.dst!r}"
            )
        reports = sync_namespace(
            src_rest, dst_rest, source=get_registry(src_backend), target=get_registry(dst_backend)
        )
    else:
        reports = [sync_repo(Ref.parse(args.src), Ref.parse(args.dst))]
    for report in reports:
        print(report.line())
    pushed = sum(len(r.pushed) for r in reports)
    print(
        f"synced {len(reports)} repositories: {pushed} version(s) pushed, "
        f"{sum(len(r.present) for r in reports)} already there"
    )
    return 0


def add_hub_commands(commands: argparse._SubParsersAction) -> None:
    """Add the ``hub`` group to `seal-hub`'s subcommands."""
    hub = commands.add_parser("hub", help="versioned artifacts: local registry and Hugging Face Hub").add_subparsers(
        dest="hub_command", required=True
    )
    ref_help = "[local://|hf://][models/|datasets/]namespace/name[@revision]"
    listing = hub.add_parser("list", help="repositories and their versions")
    listing.add_argument("where", nargs="?", default="local://", help="local:// (default), local://NS or hf://NS")
    listing.set_defaults(handler=_list)
    show = hub.add_parser("show", help="a repository's versions, or one revision's files and card")
    show.add_argument("ref", metavar="REF", help=ref_help)
    show.set_defaults(handler=_show)
    pull = hub.add_parser("pull", help="download a revision and print its folder")
    pull.add_argument("ref", metavar="REF", help=ref_help)
    pull.add_argument("--to", default=None, help="copy the files into this (new or empty) folder")
    pull.set_defaults(handler=_pull)
    sync = hub.add_parser("sync", help="copy every version, in order, with its tags (safe to repeat)")
    sync.add_argument("src", metavar="SRC", help="a repository or a namespace, e.g. local://alice")
    sync.add_argument("dst", metavar="DST", help="the same kind, e.g. hf://alice")
    sync.set_defaults(handler=_sync)
