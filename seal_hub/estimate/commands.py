"""`seal-hub estimate`: will a recipe config fit its GPU? A self-contained block of the command line.

Reads the YAML the recipe reads (`seal_hub.estimate.plan`), the model's shape (`seal_hub.estimate.shapes`),
and prints the table of `seal_hub.estimate.report`. Exit code 0 whether or not it fits (the last line says);
a bad config path or setting is a one-line error with exit code 2 (`seal_hub.cli.main`).
"""

from __future__ import annotations

import argparse


def _estimate(args: argparse.Namespace) -> int:
    from seal_hub.estimate.plan import load_plan
    from seal_hub.estimate.report import estimate_plan, render

    plan = load_plan(args.config, args.accelerate_config, args.gpus, args.gpu_memory)
    print(render(estimate_plan(plan)))
    return 0


def add_estimate_command(commands) -> None:
    estimate = commands.add_parser(
        "estimate", help="peak GPU memory of a recipe config by part (weights, optimizer, activations, rollout)"
    )
    estimate.add_argument("--config", required=True, help="a recipe YAML (recipes/configs/*.yaml)")
    estimate.add_argument(
        "--gpu-memory", type=float, default=None, metavar="GB", help="the card's memory (default: the config's card)"
    )
    estimate.add_argument(
        "--gpus", type=int, default=None, metavar="N", help="processes / GPUs (default: the accelerate config's)"
    )
    estimate.add_argument(
        "--accelerate_config",
        default=None,
        metavar="FILE",
        help="accelerate config it launches with (default: the one its comment names; ZeRO stage and GPUs)",
    )
    # the earlier spelling, still accepted, left out of --help (as seal-hub's other commands do)
    estimate.add_argument(
        "--accelerate-config", dest="accelerate_config", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )
    estimate.set_defaults(handler=_estimate)
