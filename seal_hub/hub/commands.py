"""`seal-hub hub list|show|pull|sync` (the registry from the command line) and `seal-hub interface show|diff`.

- ``list [WHERE]``: repositories and their versions. WHERE is ``local://`` (the default: the whole local registry),
  ``local://NAMESPACE``, or ``hf://NAMESPACE``.
- ``show REF``: a repository's versions, or, with ``@revision``, that revision's commit, files and card metadata.
- ``pull REF [--to DIR]``: download a revision and print the folder (copied to DIR when given).
- ``sync SRC DST``: copy every version, in order, with its tags; SRC and DST are repositories
  (``local://alice/run1-env hf://alice/run1-env``) or namespaces (``local://alice hf://alice``). Safe to repeat.
- ``interface show PATH_OR_REF`` / ``interface diff A B``: an interface snapshot (a JSON file or a published
  environment version, ``ns/name-env@v3``) as readable lines, and what changed from A to B.

Handlers return the exit code; `HubError`s (a `ValueError`) reach `seal_hub.cli.main`, which prints them as one
line with exit code 2. Not covered: deleting repositories or versions.
"""

from __future__ import annotations

import argparse
import shutil
from dataclasses import replace
from pathlib import Path

from seal_hub.hub.registry import SCHEMES, Backend, HubError, Ref, get_registry, registry_for, with_type


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


def describe_snapshot(snapshot) -> list[str]:
    """An interface snapshot as readable lines: identity, components, rho, cause."""
    s, on = snapshot, {True: "on", False: "off"}
    cues, feedback, guides = s.schema_cues, s.recovery_feedback, s.capability_guidelines
    names = ("mark_required", "enum_values", "type_hints")
    settings = ", ".join(f"{name} {on[getattr(cues, name)]}" for name in names)
    train_only = "yes" if s.train_only else "no"
    lines = [
        f"interface {s.version}  parent {s.parent or 'none'}  suite {s.suite}  train-only {train_only}",
        f"content hash {s.content_hash}",
        *([f"derived from {s.origin.describe()}, its version {s.origin.version}"] if s.origin else []),
        f"created {s.created_at}",
        f"schema cues: {on[cues.enabled]} ({settings})",
        *([f"  note: {cues.note}"] if cues.note else []),
        f"recovery feedback: {on[feedback.enabled]}, {len(feedback.hints)} hint(s)",
        *(f"  hint [{kind}]: {text}" for kind, text in feedback.hints.items()),
        f"capability guidelines: {on[guides.enabled]}, {len(guides.lines)} line(s)",
        *(f"  guideline [{line.label}]: {line.text}" for line in guides.lines),
        "rho:",
        *(f"  {label:<20} {value:.3f}" for label, value in s.rho.items()),
    ]
    if s.cause is None:
        return [*lines, "cause: none (null interface or made by hand)"]
    profile = s.cause.profile
    lines.append(f"cause: failure profile of {profile.rollouts} rollouts, {profile.turns} labelled turns")
    lines += [
        f"  {label:<20} count {st.count:>5}  prevalence {st.prevalence:.3f}  mean reward {st.mean_reward:.3f}"
        for label, st in profile.labels.items()
    ]
    return [*lines, *(f"  rule: {rule}" for rule in s.cause.rules)]


def _interface_show(args: argparse.Namespace) -> int:
    from seal_hub.hub.sources import load_snapshot_or_ref

    print("\n".join(describe_snapshot(load_snapshot_or_ref(args.snapshot))))
    return 0


def _interface_diff(args: argparse.Namespace) -> int:
    from seal_hub.hub.sources import load_snapshot_or_ref
    from seal_hub.interface import diff

    a, b = load_snapshot_or_ref(args.a), load_snapshot_or_ref(args.b)
    print(f"--- {args.a} ({a.version}, {a.content_hash[:12]})")
    print(f"+++ {args.b} ({b.version}, {b.content_hash[:12]})")
    print("\n".join(diff(a, b)) or "no differences")
    return 0


def add_interface_commands(commands: argparse._SubParsersAction) -> None:
    """Add the ``interface`` group (show, diff) to `seal-hub`'s subcommands."""
    interface = commands.add_parser("interface", help="learning-interface snapshots").add_subparsers(
        dest="interface_command", required=True
    )
    ref_help = "a snapshot JSON file, or a published version: ns/name-env@v3 (local:// or hf:// to choose)"
    show = interface.add_parser("show", help="print a snapshot: version, parent, hash, components, rho, cause")
    show.add_argument("snapshot", metavar="PATH_OR_REF", help=ref_help)
    show.set_defaults(handler=_interface_show)
    compare = interface.add_parser("diff", help="what changed from snapshot A to snapshot B")
    compare.add_argument("a", metavar="A", help=ref_help)
    compare.add_argument("b", metavar="B", help=ref_help)
    compare.set_defaults(handler=_interface_diff)
