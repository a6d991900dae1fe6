"""`seal-hub`: the command line.

Subcommands are added by the modules they drive; each handler returns the process exit code. Errors the
user can fix (a bad path, an unknown split) are printed as one line on stderr with exit code 2, never as a
traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _suite_tasks(args: argparse.Namespace):
    from seal_hub.envs.bfcl import BfclSuite, load_split, stratified_split

    suite = BfclSuite()
    if args.split == "all" and args.split_file is None:
        return suite, list(suite.tasks.values())
    split = (
        load_split(args.split_file, known_ids=set(suite.tasks))
        if args.split_file is not None
        else stratified_split(suite.tasks, seed=args.seed)
    )
    return suite, suite.select(split.ids(args.split))


def _verify_gt(args: argparse.Namespace) -> int:
    from seal_hub.envs.bfcl.replay import verify_ground_truth

    suite, tasks = _suite_tasks(args)
    report = verify_ground_truth(suite, tasks, progress=not args.no_progress)
    for task_id, error_type in report.failed:
        print(f"FAILED {task_id}: {error_type}")
    for task_id, ours, official in report.disagreements:
        print(f"DISAGREE {task_id}: ours={'pass' if ours else 'fail'} official={'pass' if official else 'fail'}")
    if report.quirks:
        count = len(report.quirks)
        print(f"note: {count} ground-truth call(s) that the default training configuration refuses or labels:")
        for quirk in report.quirks:
            print(f"  {quirk}")
    agree = report.checked - len(report.disagreements)
    print(
        f"verified {len(report.verified)}/{report.total} ground-truth episodes "
        f"(official checker agrees on {agree}/{report.checked})"
    )
    return 0 if not report.failed and not report.disagreements else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="seal-hub", description="SEAL: co-evolving tool-use agents and environments")
    commands = parser.add_subparsers(dest="command", required=True)

    envs = commands.add_parser("envs", help="executable environments").add_subparsers(
        dest="envs_command", required=True
    )
    verify = envs.add_parser("verify-gt", help="replay the ground truth through the environment and the verifier")
    verify.add_argument("--suite", choices=["bfcl"], default="bfcl")
    verify.add_argument("--split", choices=["all", "train", "test"], default="all")
    verify.add_argument("--split-file", default=None, help="JSON with 'train' and 'test' task-id lists")
    verify.add_argument("--seed", type=int, default=0, help="seed of the stratified split when no --split-file")
    verify.add_argument("--no-progress", action="store_true", help="no progress bar")
    verify.set_defaults(handler=_verify_gt)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except (ValueError, KeyError, FileNotFoundError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"seal-hub: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
