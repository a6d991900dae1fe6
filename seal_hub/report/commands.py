"""`seal-hub report`: report.md and PNG plots from run and evaluation directories (`seal-hub diagnose`, the label
table of trajectory files, is `seal_hub.diagnosis.commands`).
"""

from __future__ import annotations

import argparse


def _report(args: argparse.Namespace) -> int:
    from seal_hub.report import build_report, parse_source_argument

    report = build_report([parse_source_argument(a) for a in args.sources], args.output_dir)
    print(f"wrote {report.path}")
    for plot in report.plots:
        print(f"  {plot.name}")
    print(f"report: {len(report.plots)} plots in {args.output_dir}")
    return 0


def add_report_commands(commands: argparse._SubParsersAction) -> None:
    report = commands.add_parser("report", help="report.md and PNG plots from training run and evaluation directories")
    report.add_argument(
        "sources",
        nargs="+",
        metavar="DIR",
        help="a run directory (seal-hub train --output_dir) or an evaluation directory (seal-hub eval --output_dir); "
        "NAME=DIR names it in tables and legends",
    )
    report.add_argument(
        "--output_dir", default="report", help="directory for report.md and the plots (default: report)"
    )
    report.set_defaults(handler=_report)
