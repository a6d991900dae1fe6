"""Argument helpers the subcommand modules share (`seal_hub/*/commands.py`): every option spelled as the
recipe's field of the same meaning, and the task-selection flags of commands that run a suite.

Why a module of its own: each package adds its own subcommands next to the code it drives; these few helpers
are what those `commands.py` files have in common, and living here (not in `cli.py`) keeps the imports one way
(`cli.py` imports the command modules, never the reverse).
"""

from __future__ import annotations

import argparse

from seal_hub.envs.user.spec import DEFAULT_CALL_TIMEOUT_S, DEFAULT_EVAL_FRACTION
from seal_hub.toolcalls import PARSER_STYLES

PARSER_HELP = "tool-call format (default: the one the chat template writes)"

__all__ = [
    "PARSER_HELP",
    "PARSER_STYLES",
    "environment_arguments",
    "environment_options",
    "option",
    "positive_limit",
    "task_arguments",
]


def option(parser: argparse.ArgumentParser, name: str, **kwargs) -> None:
    """`--name`, spelled as the recipe's field of the same meaning (`seal-hub train` flags, YAML keys); one
    spelling only (pre-1.0: the earlier dashed ones are gone)."""
    parser.add_argument(f"--{name}", **kwargs)


def task_arguments(parser: argparse.ArgumentParser, default_split: str, suites: list[str] | None = None) -> None:
    """`--suite`, `--split`, `--split_file`, `--no_progress`: which tasks a command runs."""
    from seal_hub.envs.builtin import SUITES

    choices = suites or list(SUITES)
    parser.add_argument("--suite", choices=choices, default=choices[0], help="task suite (default: %(default)s)")
    parser.add_argument("--split", default=default_split, help="train, test or all (or a suite's named split)")
    option(
        parser,
        "split_file",
        default=None,
        help="'paper' (bfcl's default: the SEAL paper's 400/400 split, shipped), 'stratified' (seeded by --seed), "
        "or a JSON file with 'train' and 'test' task-id lists",
    )
    option(parser, "no_progress", action="store_true", help="no progress bar")
    environment_arguments(parser)


def environment_arguments(parser: argparse.ArgumentParser) -> None:
    """`--environment`, `--dataset`, `--dataset_revision`, `--eval_fraction`, `--call_timeout_s`, `--reward_funcs`,
    `--success_threshold`, `--episodes`, `--episode_seed`: a user's own TRL setup (`environment_factory`, reward
    functions) and its dataset, or its seeded episodes, instead of `--suite` (docs/environments.md)."""
    option(
        parser,
        "environment",
        default=None,
        help="your environment class, 'package.module:Class' (TRL's environment_factory form), instead of --suite",
    )
    option(parser, "dataset", default=None, help="its tasks: a datasets repo id (repo@rev), a saved folder or JSONL")
    option(parser, "dataset_revision", default=None, help="the dataset repo's revision (or give repo@rev)")
    option(
        parser,
        "eval_fraction",
        type=float,
        default=DEFAULT_EVAL_FRACTION,
        help="the share of every category held out when the dataset names no split (as the run trained with)",
    )
    option(
        parser,
        "call_timeout_s",
        type=float,
        default=DEFAULT_CALL_TIMEOUT_S,
        help="time limit of one call into the environment",
    )
    option(
        parser,
        "reward_funcs",
        default=None,
        help="its reward functions, TRL's form: 'package.module:function[,...]' (as the run trained with)",
    )
    option(
        parser,
        "success_threshold",
        type=float,
        default=None,
        help="the reward at or above which an episode passed (default 1.0; as the run trained with)",
    )
    option(parser, "episodes", type=int, default=None, help="no dataset (reset makes the prompt): held-out episodes")
    option(parser, "episode_seed", type=int, default=0, help="no dataset: the seed its episodes start from")


def environment_options(args: argparse.Namespace) -> dict:
    """The keywords `seal_hub.envs.builtin.resolve_suite` takes from `environment_arguments`' flags."""
    options = {"environment": args.environment, "dataset": args.dataset, "dataset_revision": args.dataset_revision}
    if args.environment is not None or args.dataset is not None:
        options["call_timeout_s"] = args.call_timeout_s
        options["eval_fraction"] = args.eval_fraction
        options["reward_funcs"] = tuple(f for f in (args.reward_funcs or "").split(",") if f)
        options["success_threshold"] = args.success_threshold
        if args.dataset is None and args.episodes is not None:
            options |= {"episodes": args.episodes, "episode_seed": args.episode_seed}
    return options


def positive_limit(limit: int | None) -> int | None:
    """`--limit` checked: None (every task) or >= 1."""
    if limit is not None and limit < 1:
        raise ValueError(f"--limit must be >= 1, got {limit}")
    return limit
