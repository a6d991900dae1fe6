"""The arguments the commands that run a suite share, as dataclasses parsed with transformers' `HfArgumentParser`
(as the training script's are): which tasks (`TaskArguments`) and a user's own environment in place of a built-in
suite (`EnvironmentArguments`). A command's own dataclass adds its fields to these (keyword-only fields, so a
command's required ones can follow them), and `add_command` turns it into a `seal-hub` subcommand.

One spelling per option: a field's name (``--max_new_tokens``, the training recipe's spelling, its YAML key);
`HfArgumentParser`'s dashed aliases are dropped (pre-1.0, the earlier dashed spellings are gone). One rule for
`--limit` (N tasks of the split, its categories taken in turn, `seal_hub.envs.suite.in_turn`, as the held-out
subsets are taken), one way to list categories (``--categories simple multiple``, as `seal-hub train` lists them;
a comma-separated word is split too), and the split's seed (`--split_seed`, for ``--split_file stratified``) apart
from any sampling seed.

Why a module of its own: each package adds its subcommands next to the code it drives; these are what those
`commands.py` files have in common, and living here (not in `cli.py`) keeps the imports one way (`cli.py` imports
the command modules, never the reverse).

Not covered: the training script's arguments (`seal_hub.scripts.seal`, parsed with TRL's `TrlParser`).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from seal_hub.defaults import DEFAULT_SUITE
from seal_hub.envs.user.spec import DEFAULT_CALL_TIMEOUT_S, DEFAULT_EVAL_FRACTION
from seal_hub.models.toolcalls import PARSER_STYLES

PARSER_STYLE_HELP = {"help": "tool-call format (default: the one the chat template writes)", "choices": PARSER_STYLES}


@dataclass(kw_only=True)
class TaskArguments:
    """Which tasks a command runs: a suite, its split, and a subset of it."""

    suite: str = field(
        default=DEFAULT_SUITE, metadata={"help": "task suite: bfcl, bfcl-single, bfcl-memory, tau2-telecom"}
    )
    split: str = field(default="test", metadata={"help": "train, test or all (or a suite's named split)"})
    split_file: str | None = field(
        default=None,
        metadata={
            "help": "'paper' (bfcl's default: the SEAL paper's 400/400 split, shipped), 'stratified' (seeded by "
            "--split_seed), or a JSON file with 'train' and 'test' task-id lists"
        },
    )
    split_seed: int = field(default=0, metadata={"help": "seed of the stratified split (--split_file stratified)"})
    limit: int | None = field(
        default=None, metadata={"help": "N tasks of the split, its categories taken in turn (default: all)"}
    )
    categories: list[str] | None = field(
        default=None, metadata={"help": "categories of the suite to run, e.g. --categories simple multiple (all)"}
    )
    no_progress: bool = field(default=False, metadata={"help": "no progress bar"})

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"--limit must be >= 1, got {self.limit}")
        if self.categories is not None:
            named = [part.strip() for item in self.categories for part in item.split(",")]
            self.categories = list(dict.fromkeys(part for part in named if part)) or None

    def select(self, suite: Any) -> list[Any]:
        """The tasks of `suite` these arguments name: the split (of `split_file`, seeded by `split_seed`), then
        `limit` of them with the `categories` taken in turn."""
        from seal_hub.envs.suite import in_turn

        tasks = suite.select(suite.split_ids(self.split, self.split_file, seed=self.split_seed))
        if self.limit is not None or self.categories:
            tasks = in_turn(tasks, self.limit, self.categories)
        return tasks

    def split_source(self, suite: Any) -> str:
        """How results name the split: its file (or the suite's default) and the categories chosen."""
        chosen = f"; categories {','.join(self.categories)}" if self.categories else ""
        return (self.split_file or suite.default_split) + chosen


@dataclass(kw_only=True)
class EnvironmentArguments:
    """A user's own TRL setup (`environment_factory`, reward functions) and its dataset, or its seeded episodes,
    instead of `--suite` (docs/environments.md)."""

    environment: str | None = field(
        default=None,
        metadata={"help": "your environment class, 'package.module:Class' (TRL's environment_factory form)"},
    )
    dataset: str | None = field(
        default=None, metadata={"help": "its tasks: a datasets repo id (repo@rev), a saved folder or JSONL"}
    )
    dataset_revision: str | None = field(default=None, metadata={"help": "the dataset repo's revision"})
    eval_fraction: float = field(
        default=DEFAULT_EVAL_FRACTION,
        metadata={"help": "the share of every category held out when the dataset names no split"},
    )
    call_timeout_s: float = field(
        default=DEFAULT_CALL_TIMEOUT_S, metadata={"help": "time limit of one call into the environment"}
    )
    reward_funcs: str | None = field(
        default=None, metadata={"help": "its reward functions, TRL's form: 'package.module:function[,...]'"}
    )
    success_threshold: float | None = field(
        default=None, metadata={"help": "the reward at or above which an episode passed (default 1.0)"}
    )
    episodes: int | None = field(default=None, metadata={"help": "no dataset (reset makes the prompt): episodes"})
    episode_seed: int = field(default=0, metadata={"help": "no dataset: the seed its episodes start from"})

    def environment_options(self) -> dict[str, Any]:
        """The keywords `seal_hub.envs.builtin.resolve_suite` takes from these fields."""
        options: dict[str, Any] = {
            "environment": self.environment,
            "dataset": self.dataset,
            "dataset_revision": self.dataset_revision,
        }
        if self.environment is not None or self.dataset is not None:
            options["call_timeout_s"] = self.call_timeout_s
            options["eval_fraction"] = self.eval_fraction
            options["reward_funcs"] = tuple(f for f in (self.reward_funcs or "").split(",") if f)
            options["success_threshold"] = self.success_threshold
            if self.dataset is None and self.episodes is not None:
                options |= {"episodes": self.episodes, "episode_seed": self.episode_seed}
        return options


def field_parser(cls: type) -> argparse.ArgumentParser:
    """`HfArgumentParser` over `cls`'s fields, each spelled as its name only (no dashed alias), without --help."""
    from transformers import HfArgumentParser

    parser = HfArgumentParser(cls, add_help=False)
    for action in parser._actions:
        for option in [o for o in action.option_strings if o.startswith("--") and "-" in o[2:]]:
            action.option_strings.remove(option)
            del parser._option_string_actions[option]
    return parser


def from_namespace(cls: type, namespace: argparse.Namespace) -> Any:
    """The `cls` record of a parsed command line (its `__post_init__` checks run here: one-line `ValueError`s)."""
    return cls(**{f.name: getattr(namespace, f.name) for f in dataclasses.fields(cls) if f.init})


def add_command(
    commands: argparse._SubParsersAction, name: str, cls: type, run: Callable[[Any], int], **kwargs: Any
) -> argparse.ArgumentParser:
    """The subcommand `name` whose options are `cls`'s fields; its handler builds the record and calls `run`."""
    parser = commands.add_parser(name, parents=[field_parser(cls)], **kwargs)
    parser.set_defaults(handler=lambda namespace: run(from_namespace(cls, namespace)))
    return parser
