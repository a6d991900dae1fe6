"""`seal-hub`: the command line. This module builds the top parser and dispatches; nothing else.

Each subcommand lives next to the code it drives (`seal_hub/<package>/commands.py`: envs, rollout,
evaluation, report, diagnosis, interface, hub, replay's space, estimate) and returns the process exit
code. Errors the user can fix (a bad path, an unknown split, a refused reference) are the project's own error
types, all `ValueError`s or `OSError`s, printed as one line on stderr with exit code 2, never as a traceback;
anything else is a bug and keeps its traceback. `seal-hub train [--config ...]` hands the rest of its command
line to the training script (`seal_hub.scripts.seal`, TrlParser flags), as TRL's CLI does with `trl/scripts/`;
it trains in this process (`accelerate launch -m seal_hub.scripts.seal` for several processes).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from seal_hub.console import quiet_library_notices


def build_parser() -> argparse.ArgumentParser:
    from seal_hub.diagnosis.commands import add_diagnose_command
    from seal_hub.envs.commands import add_envs_commands
    from seal_hub.estimate.commands import add_estimate_command
    from seal_hub.evaluation.commands import add_eval_command
    from seal_hub.hub.commands import add_hub_commands
    from seal_hub.interface.commands import add_interface_commands
    from seal_hub.replay.commands import add_space_commands
    from seal_hub.report.commands import add_report_commands
    from seal_hub.rollout.commands import add_rollout_command

    parser = argparse.ArgumentParser(prog="seal-hub", description="SEAL: co-evolving tool-use agents and environments")
    commands = parser.add_subparsers(dest="command", required=True)
    # listed here for --help; `main` hands everything after `train` to the script's own parser
    commands.add_parser(
        "train",
        add_help=False,
        help="train with SEAL (seal_hub.scripts.seal; no --config: the CPU demo); `seal-hub train --help`",
    )
    add_envs_commands(commands)
    add_rollout_command(commands)
    add_eval_command(commands)
    add_report_commands(commands)
    add_diagnose_command(commands)
    add_interface_commands(commands)
    add_hub_commands(commands)
    add_space_commands(commands)
    add_estimate_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    quiet_library_notices()  # before a command imports peft/transformers (seal_hub.console)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["train"]:  # the training script parses its own flags (TrlParser: YAML --config, field names)
        from seal_hub.scripts.seal import run

        return run(argv[1:], prog="seal-hub train")
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except (ValueError, OSError) as exc:
        print(f"seal-hub: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
