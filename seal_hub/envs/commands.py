"""`seal-hub envs verify-gt`: replay a suite's ground truth through its environment and verifier.

BFCL multi-turn only: it is the suite whose verdicts an official checker (bfcl-eval's) can confirm task by
task; the other suites check their oracles through `seal-hub eval --model oracle`.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from seal_hub.cli_args import TaskArguments, add_command


@dataclass(kw_only=True)
class VerifyArguments(TaskArguments):
    """`seal-hub envs verify-gt`'s options: BFCL's tasks, every one unless a split or subset is named."""

    suite: str = field(default="bfcl", metadata={"help": "task suite (bfcl: the one an official checker confirms)"})
    split: str = field(default="all", metadata={"help": "train, test or all"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.suite != "bfcl":
            raise ValueError(
                f"--suite {self.suite}: verify-gt replays bfcl only (others: seal-hub eval --model oracle)"
            )


def _verify_gt(args: VerifyArguments) -> int:
    from seal_hub.envs.bfcl.replay import verify_ground_truth
    from seal_hub.envs.builtin import load_suite

    suite = load_suite(args.suite)
    tasks = args.select(suite)
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


def add_envs_commands(commands: argparse._SubParsersAction) -> None:
    envs = commands.add_parser("envs", help="executable environments").add_subparsers(
        dest="envs_command", required=True
    )
    helped = "replay the ground truth through the environment and the verifier"
    add_command(envs, "verify-gt", VerifyArguments, _verify_gt, help=helped)
