"""Which tasks a run trains and evaluates on, chosen once: the suite, its split, the training tasks and the held-out
tasks, from the training script's `TaskArguments`.

`TaskArguments` are the flags and YAML keys that say where the tasks come from (a built-in suite, or a user's
environment with its dataset, reward functions and split) and which of them train (`split_file`, `categories`,
`num_train_tasks`, `task_order`). `select_tasks` resolves them once into a `TaskSelection`: the training tasks the
trainer draws from and the held-out tasks that both the trainer's periodic evaluation (`eval_every_steps`) and the
held-out comparison (`seal_hub.training.comparison`) score, so both see the same tasks. It refuses, before any model
loads, a selection that cannot train: fewer tasks than one generation batch draws (`TooFewTasksError`, with the
numbers), or a warm-up on tasks without reference answers.

Not covered: the held-out evaluation itself (`seal_hub.training.held_out`), and how a suite makes its split
(each suite's package, `seal_hub.envs.splits`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from seal_hub.defaults import DEFAULT_SUITE
from seal_hub.envs.builtin import require_trainable, resolve_suite, trainable_suites
from seal_hub.envs.splits import Split
from seal_hub.envs.suite import Suite, SuiteError, SuiteTask, in_turn
from seal_hub.envs.user.spec import DEFAULT_CALL_TIMEOUT_S, DEFAULT_EVAL_FRACTION
from seal_hub.training.held_out import held_out_tasks
from seal_hub.training.warmup import require_answers

if TYPE_CHECKING:
    from seal_hub.training.config import SealConfig


@dataclass
class TaskArguments:
    """Where the tasks come from and which of them train; the field names are the flags and YAML keys."""

    suite: str = field(
        default=DEFAULT_SUITE,
        metadata={"help": f"Suite to train on: {', '.join(trainable_suites())} (each suite says why it cannot)."},
    )
    environment: str | None = field(
        default=None,
        metadata={
            "help": "Your own environment instead of suite: its class as 'package.module:Class', in TRL's "
            "environment_factory form (public methods are the tools, reset(**row), get_reward()); needs dataset."
        },
    )
    dataset: str | None = field(
        default=None,
        metadata={
            "help": "The environment's tasks: a datasets repo id ('repo@rev' or dataset_revision), a saved dataset "
            "folder, a data file or JSONL; a 'prompt' column and what reset takes (docs/environments.md)."
        },
    )
    dataset_revision: str | None = field(default=None, metadata={"help": "The dataset repo's revision."})
    reward_funcs: list[str] | None = field(
        default=None,
        metadata={
            "help": "The environment's reward functions, TRL's form ('package.module:function', comma-separated or a "
            "YAML list), called as GRPOTrainer calls them; summed with get_reward (reward_weights weigh them)."
        },
    )
    eval_fraction: float = field(
        default=DEFAULT_EVAL_FRACTION,
        metadata={"help": "Share of every category held out when the environment's dataset names no split."},
    )
    call_timeout_s: float = field(
        default=DEFAULT_CALL_TIMEOUT_S,
        metadata={"help": "Time limit of one call into the environment (a tool, reset, get_reward)."},
    )
    split_file: str | None = field(
        default=None,
        metadata={
            "help": "Unset: the suite's shipped split (bfcl: 'paper', the SEAL paper's 400/400 split; bfcl-single: "
            "half of every category, seed 0); 'stratified': our seeded stratified split (split_seed); else a JSON "
            "file with 'train'/'test' task-id lists."
        },
    )
    split_seed: int = field(default=0, metadata={"help": "Seed of the stratified split (split_file 'stratified')."})
    eval_split: str = field(
        default="test",
        metadata={
            "help": "The split held-out evaluations score (eval_every_steps, held_out_comparison): 'test', or a split "
            "the dataset or split file names, e.g. 'dev' for learning curves that leave the test split unread."
        },
    )
    num_train_tasks: int | None = field(default=None, metadata={"help": "Train on the first N tasks (all if unset)."})
    categories: list[str] | None = field(
        default=None,
        metadata={
            "help": "Categories of the suite to train and evaluate on, taken in turn (e.g. bfcl-single: simple "
            "multiple parallel live_simple irrelevance); unset: all."
        },
    )
    task_order: str = field(
        default="split",
        metadata={
            "help": "'split': the split's order (with categories: taken in turn); 'shortest': shortest first.",
            "choices": ["split", "shortest"],
        },
    )

    def __post_init__(self) -> None:
        if isinstance(self.reward_funcs, str):
            self.reward_funcs = [self.reward_funcs]
        self.reward_funcs = [f for given in self.reward_funcs or () for f in given.split(",") if f] or None
        if self.environment is None and self.dataset is None:
            if self.reward_funcs:
                raise ValueError("reward_funcs needs environment: the factory whose rollouts they score")
            require_trainable(self.suite)  # a suite that cannot train: one line that says why, names those that can
        elif self.environment is None:
            raise ValueError("dataset needs environment: a user environment is its factory and its dataset")

    def resolve_suite(self, config: SealConfig | None = None) -> Suite:
        """The suite this run trains on: the user environment, else the built-in suite (`resolve_suite`). A user
        environment without a dataset is dataset-free: `config.max_steps` steps of fresh seeded episodes to train
        on, `config.eval_tasks` held out (seed: `config.seed`)."""
        if self.environment is None:
            return resolve_suite(self.suite)
        options = {
            "eval_fraction": self.eval_fraction,
            "call_timeout_s": self.call_timeout_s,
            "reward_funcs": tuple(self.reward_funcs or ()),
            "success_threshold": config.success_threshold if config is not None else None,
        }
        if self.dataset is None:
            if config is None or config.max_steps <= 0:
                raise SuiteError(
                    f"environment {self.environment} without dataset: reset makes the prompt, so set max_steps > 0 "
                    "(it bounds training, as in TRL)"
                )
            per_step = config.generation_batch_size // config.num_generations
            options |= {"episodes": config.eval_tasks, "train_episodes": config.max_steps * per_step}
            options["episode_seed"] = config.seed
        return resolve_suite(
            self.suite,
            environment=self.environment,
            dataset=self.dataset,
            dataset_revision=self.dataset_revision,
            **options,
        )


def environment_run_name(environment: str) -> str:
    """`seal-<class>` for an environment's import path (`pkg.mod:MyEnv` -> `seal-myenv`): the run name and output
    folder a user environment gets on the CPU demo's config, in place of the demo's own."""
    name = re.split(r"[:.]", environment.strip())[-1]
    return "seal-" + (re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "environment")


@dataclass(frozen=True)
class TaskSelection:
    """A run's tasks, chosen once: what it trains on and what every held-out evaluation of it scores."""

    suite: Suite
    split: Split
    train: tuple[SuiteTask, ...]
    held_out: tuple[SuiteTask, ...] = ()  # empty when the run evaluates nothing held out
    categories: tuple[str, ...] = ()
    eval_split: str = "test"  # the split `held_out` was taken from


class TooFewTasksError(ValueError):
    """Fewer training tasks than one generation batch draws: TRL's sampler would yield no batch at all."""


def select_tasks(
    args: TaskArguments, config: SealConfig, *, held_out: bool = False, warmup: bool = False
) -> TaskSelection:
    """The run's tasks: the training tasks (checked against one generation batch, and with `warmup` for reference
    answers) and, with `held_out`, `config.eval_tasks` tasks of `eval_split` (`held_out_tasks`), once."""
    suite = args.resolve_suite(config)
    split = task_split(suite, args)
    tasks = training_tasks(suite, args, split)
    check_enough_tasks(len(tasks), config)
    if warmup:
        require_answers(suite, tasks)
    scored = (
        split.test if args.eval_split == "test" else suite.split_ids(args.eval_split, args.split_file, args.split_seed)
    )
    held = held_out_tasks(suite, scored, config.eval_tasks, args.categories) if held_out else ()
    return TaskSelection(suite, split, tuple(tasks), tuple(held), tuple(args.categories or ()), args.eval_split)


def task_split(suite: Suite, args: TaskArguments) -> Split:
    """The suite's train and test ids under `split_file` (unset: the suite's shipped split)."""
    train, test = (suite.split_ids(name, args.split_file, seed=args.split_seed) for name in ("train", "test"))
    return Split(train, test, source=args.split_file or "default")


def training_tasks(suite: Suite, args: TaskArguments, split: Split | None = None) -> list[SuiteTask]:
    """The split's training tasks (`split`, else `task_split`'s) of `categories` taken in turn, in `task_order`,
    the first `num_train_tasks`."""
    tasks = suite.select((split or task_split(suite, args)).train)
    if args.categories:  # a subset of the categories: taken in turn, so any prefix covers them evenly
        tasks = in_turn(tasks, categories=args.categories)
    if args.task_order == "shortest":
        tasks.sort(key=lambda task: (prompt_size(suite, task), task.id))
    return tasks[: args.num_train_tasks] if args.num_train_tasks else tasks


def check_enough_tasks(count: int, config: SealConfig) -> None:
    """TRL's `RepeatSampler` draws `generation_batch_size / num_generations` distinct prompts per generation batch
    and drops an incomplete one, so fewer tasks than that would train nothing (transformers stops at step 0 and
    says only that the epoch has no sample); refused here with the numbers instead."""
    needed = config.generation_batch_size // config.num_generations
    if count < needed:
        raise TooFewTasksError(
            f"{count} training task(s), but one generation batch takes {needed} distinct prompts "
            f"(per_device_train_batch_size {config.per_device_train_batch_size} x {config.world_size} process(es) x "
            f"{config.steps_per_generation} step(s) per generation / num_generations {config.num_generations}): "
            "nothing would train. Raise num_train_tasks, or lower per_device_train_batch_size"
        )


CHARS_PER_TURN = 400  # about one model reply of ~100 tokens per user turn


def prompt_size(suite: Suite, task: SuiteTask) -> int:
    """A tokenizer-free proxy for an episode's length in characters: the first prompt (tool schemas and
    first user turn), the later user turns, and room for one reply per turn (a single-turn task: one turn)."""
    episode = suite.episode(task)
    observation = episode.reset()
    episode.close()
    turns = getattr(task, "turns", None) or [observation.messages]
    user_text = sum(len(m.content) for turn in turns for m in turn)
    return len(str(observation.tools)) + user_text + CHARS_PER_TURN * len(turns)
