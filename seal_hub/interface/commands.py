"""`seal-hub interface show|diff`: interface snapshots from the command line.

- ``interface show PATH_OR_REF``: a snapshot (a JSON file or a published environment version, ``ns/name-env@v3``)
  as readable lines: identity, components, rho, cause;
- ``interface diff A B``: what changed from A to B (`seal_hub.interface.diff`).

Handlers return the exit code; a bad file or reference is a `ValueError` that `seal_hub.cli.main` prints as one
line with exit code 2.
"""

from __future__ import annotations

import argparse


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
    from seal_hub.hub.loading import load_interface

    print("\n".join(describe_snapshot(load_interface(args.snapshot))))
    return 0


def _interface_diff(args: argparse.Namespace) -> int:
    from seal_hub.hub.loading import load_interface
    from seal_hub.interface.diff import diff

    a, b = load_interface(args.a), load_interface(args.b)
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
