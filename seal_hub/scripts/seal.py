"""SEAL: train a tool-use policy and its learning environment together, on BFCL v3 multi-turn or single-turn.

The training script, shipped in the package: `seal-hub train` runs it in this process, `recipes/seal.py` is
its `accelerate launch` entry in a checkout, and `accelerate launch -m seal_hub.scripts.seal` launches it from
an installed wheel (several processes, DeepSpeed). Without --config it runs the CPU demo, whose config ships
with the package (`seal_hub/scripts/configs/demo_cpu.yaml`, its one copy; flags override it):

    seal-hub train
    seal-hub train --max_steps 4
    accelerate launch recipes/seal.py
    accelerate launch --config_file recipes/accelerate/single_gpu.yaml recipes/seal.py \
        --config recipes/configs/qwen2.5-7b-qlora.yaml
    accelerate launch --config_file recipes/accelerate/zero3.yaml -m seal_hub.scripts.seal \
        --config recipes/configs/paper_full_ft.yaml

`--suite bfcl-single` trains on BFCL single-turn instead (one checked answer per question; its training half of
the shipped half/half split, the other half held out); each suite says whether it can train (`not_trainable`).
`--environment my_package.module:MyEnv --dataset tasks.jsonl` trains on your own environment: TRL 1.16's
`environment_factory` (a class, a zero-argument function, or a dict of them routed by the rows' `environment`
column; public methods are the tools, `reset(**row)`, an optional `get_reward()`) with its dataset, and
`--reward_funcs my_package.rewards:score[,...]` TRL's reward functions (docs/environments.md); YAML keys
`environment:`, `dataset:`, `dataset_revision:`, `reward_funcs:`. Without `--dataset`, `reset` makes the prompt:
`max_steps` bounds training and `eval_tasks` seeded episodes are held out. `--success_threshold` says which
reward passes (unset: 1.0).

Ablations of the paper, same recipe and budget: `--env_adaptation false`, `--reweighting false`,
`--closed_loop false`; all three false is vanilla GRPO. `--sft_warmup_steps N` first fits the training
tasks' reference answers with SFT (format teaching for small models; off by default; `--sft_warmup_dir DIR`
shares one warm-up between runs, as the experiment's arms do). Relaunching with the same
`--output_dir` resumes from its last complete checkpoint; a run that already reached `max_steps` trains
nothing more (it saves the final adapter and publishes what a kill left unpublished, then says it is
complete); relaunch with a larger `--max_steps` to extend it. `--eval_every_steps N --eval_tasks M`: every N
steps, M tasks of the test split are rolled out greedily on the null interface and logged as
`eval/success_rate`; `--report_to trackio` logs everything, SEAL's `seal/...` metrics included, to a local
trackio project.

Reuse what others published: `--interface ns/run-env@v3` trains against that environment version (fixed with
`--env_adaptation false`, else evolving from it as v4, v5, ...), `--init_adapter ns/run-adapter@iter-3` starts
the policy from that adapter (same base model), or from a full fine-tune's weights when that run published one.
Both resolve once to a commit, recorded in `<output_dir>/sources.json` and named on every published card.

Arguments: `SealScriptArguments` below, `seal_hub.training.trainer.SealConfig` (TRL's GRPOConfig plus SEAL's fields)
and `seal_hub.models.PolicyConfig` (TRL's ModelConfig); YAML keys and flags are the field names.
"""

# ruff: noqa: E402 -- run as a script, the lines below quiet library notices before peft is imported
from __future__ import annotations

if __name__ == "__main__":  # python -m / accelerate launch -m seal_hub.scripts.seal (an entry point, not a library)
    from seal_hub.console import quiet_library_notices

    quiet_library_notices()

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import torch
from accelerate import PartialState
from peft import get_peft_model
from trl import TrlParser

from seal_hub.envs.builtin import require_trainable, resolve_suite, trainable_suites
from seal_hub.envs.splits import Split, SplitError
from seal_hub.envs.suite import Suite, SuiteError, in_turn
from seal_hub.envs.user.spec import DEFAULT_CALL_TIMEOUT_S, DEFAULT_EVAL_FRACTION
from seal_hub.hub import HubError, PublishConfig
from seal_hub.hub.callback import PublishCallback
from seal_hub.hub.sources import SourceError, attach_policy, check_base_model, derive_interface, run_sources
from seal_hub.interface import InterfaceError
from seal_hub.models import PolicyConfig, load_policy, lora_config
from seal_hub.training import SealConfig, SealTrainer
from seal_hub.training.comparison import (
    HeldOutPlan,
    comparison_lines,
    evaluate_stage,
    held_out_curve,
    read_stage,
    stage_dir,
    stage_point,
)
from seal_hub.training.held_out import held_out_protocol, held_out_tasks, write_held_out
from seal_hub.training.kill_points import kill_point
from seal_hub.training.run_records import last_checkpoint, read_metrics
from seal_hub.training.warmup import (
    WarmupMismatchError,
    require_answers,
    run_warmup,
    shared_warmup,
    warmup_dataset,
)

# the CPU demo, the default without --config (package data, its one copy)
DEFAULT_CONFIG = Path(str(resources.files("seal_hub.scripts").joinpath("configs", "demo_cpu.yaml")))


@dataclass
class SealScriptArguments:
    suite: str = field(
        default="bfcl",
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
    num_train_tasks: int | None = field(default=None, metadata={"help": "Train on the first N tasks (all if unset)."})
    categories: list[str] | None = field(
        default=None,
        metadata={
            "help": "Categories of the suite to train and evaluate on, taken in turn (e.g. bfcl-single: simple "
            "multiple parallel live_simple irrelevance); unset: all."
        },
    )
    held_out_comparison: bool = field(
        default=False,
        metadata={
            "help": "Evaluate the policy before training, after the warm-up and after SEAL on the same eval_tasks "
            "held-out tasks, with seal-hub eval's harness and protocol (eval_max_new_tokens), into output_dir/eval/; "
            "the summary ends with the comparison (seal_hub.training.comparison)."
        },
    )
    publish_run: str | None = field(
        default=None,
        metadata={
            "help": "Publish every iteration's artifacts as <run>-trajectories / -env / -adapter "
            "('namespace/name'); unset: publish nothing."
        },
    )
    publish_backend: str = field(
        default="auto",
        metadata={
            "help": "'local' (git registry, offline), 'hub', or 'auto' (the Hub when a token is configured).",
            "choices": ["auto", "local", "hub"],
        },
    )
    publish_private: bool = field(
        default=False,
        metadata={"help": "Create the run's Hub repositories private (publish_backend 'hub' or 'auto')."},
    )
    sft_warmup_steps: int = field(
        default=0,
        metadata={"help": "SFT steps on the training tasks' ground truth before SEAL (format teaching); 0: none."},
    )
    sft_learning_rate: float = field(default=1e-4, metadata={"help": "Learning rate of the SFT warm-up."})
    sft_batch_size: int = field(
        default=1, metadata={"help": "Conversations per SFT warm-up step (accumulated one at a time: no padding)."}
    )
    sft_frozen_context: bool = field(
        default=False,
        metadata={
            "help": "Run each warm-up conversation's context (before its first trained token) without gradient: "
            "about 2x faster per conversation on the CPU demo; the answer positions still learn "
            "(seal_hub.training.frozen_context)."
        },
    )
    sft_warmup_dir: str | None = field(
        default=None,
        metadata={
            "help": "A folder runs share to start from one warm-up (the experiment's arms of a seed): the first run "
            "trains the warm-up and saves it there, a later one with the same settings loads it; unset: "
            "output_dir/sft-warmup, not shared."
        },
    )
    interface: str | None = field(
        default=None,
        metadata={
            "help": "Start from a published environment version ('ns/name-env@v3'; local:// or hf:// to choose): "
            "fixed for the run with env_adaptation false, else evolved from there (v4, v5, ...)."
        },
    )
    init_adapter: str | None = field(
        default=None,
        metadata={
            "help": "Start the policy from a published LoRA adapter ('ns/name-adapter@iter-3'); its base model must "
            "be model_name_or_path. Its own LoRA configuration is kept (merged into the weights when use_peft is "
            "off). A full fine-tune's version gives the weights, trained as use_peft says."
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
            self._check_publishing()
            return
        if self.environment is None:
            raise ValueError("dataset needs environment: a user environment is its factory and its dataset")
        self._check_publishing()

    def _check_publishing(self) -> None:
        if self.publish_private and not self.publish_run:
            raise ValueError("publish_private is set but publish_run is not: name the run ('namespace/name')")
        if self.publish_private and self.publish_backend == "local":
            raise ValueError("publish_private applies to the Hub only: set publish_backend hub (or auto), or drop it")

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


def publish_callback(script_args: SealScriptArguments, model_args: PolicyConfig) -> PublishCallback | None:
    """The callback that publishes the run (`--publish_run`, `--publish_backend`, `--publish_private`; the cards name
    `model_name_or_path` as the base model), or None: publish nothing. The one publishing surface of a run:
    `SealConfig` refuses transformers' `push_to_hub` / `hub_model_id` / `hub_private_repo`."""
    if not script_args.publish_run:
        return None
    return PublishCallback(
        PublishConfig(
            run=script_args.publish_run,
            backend=script_args.publish_backend,
            private=script_args.publish_private,
            base_model=model_args.model_name_or_path,
        )
    )


def task_split(suite: Suite, args: SealScriptArguments) -> Split:
    """The suite's train and test ids under `split_file` (unset: the suite's shipped split)."""
    train, test = (suite.split_ids(name, args.split_file, seed=args.split_seed) for name in ("train", "test"))
    return Split(train, test, source=args.split_file or "default")


def training_tasks(suite: Suite, args: SealScriptArguments):
    split = task_split(suite, args)
    tasks = suite.select(split.train)
    if args.categories:  # a subset of the categories: taken in turn, so any prefix covers them evenly
        tasks = in_turn(tasks, categories=args.categories)
    if args.task_order == "shortest":
        tasks.sort(key=lambda task: (prompt_size(suite, task), task.id))
    return tasks[: args.num_train_tasks] if args.num_train_tasks else tasks


class TooFewTasksError(ValueError):
    """Fewer training tasks than one generation batch draws: TRL's sampler would yield no batch at all."""


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


def held_out_plan(suite: Suite, args: SealScriptArguments, config: SealConfig) -> HeldOutPlan:
    """The held-out tasks and protocol every stage of the comparison uses (the trainer's eval_every_steps too)."""
    tasks = held_out_tasks(suite, task_split(suite, args).test, config.eval_tasks, args.categories)
    protocol = held_out_protocol(config)
    return HeldOutPlan(suite, tuple(tasks), protocol, args.split_file or "default", tuple(args.categories or ()))


CHARS_PER_TURN = 400  # about one model reply of ~100 tokens per user turn


def prompt_size(suite: Suite, task) -> int:
    """A tokenizer-free proxy for an episode's length in characters: the first prompt (tool schemas and
    first user turn), the later user turns, and room for one reply per turn (a single-turn task: one turn)."""
    episode = suite.episode(task)
    observation = episode.reset()
    episode.close()
    turns = getattr(task, "turns", None) or [observation.messages]
    user_text = sum(len(m.content) for turn in turns for m in turn)
    return len(str(observation.tools)) + user_text + CHARS_PER_TURN * len(turns)


def use_cpu_cores() -> None:
    """`accelerate launch` sets OMP_NUM_THREADS=1; without a GPU, give each process its share of the cores.

    SEAL_HUB_CPU_THREADS overrides the share.
    """
    if torch.cuda.is_available():
        return
    share = (os.cpu_count() or 1) // int(os.environ.get("WORLD_SIZE", "1"))
    torch.set_num_threads(max(1, int(os.environ.get("SEAL_HUB_CPU_THREADS", share))))


def main(script_args: SealScriptArguments, training_args: SealConfig, model_args: PolicyConfig) -> None:
    use_cpu_cores()
    suite = script_args.resolve_suite(training_args)
    tasks = training_tasks(suite, script_args)
    check_enough_tasks(len(tasks), training_args)
    if script_args.sft_warmup_steps:
        require_answers(suite, tasks)
    with PartialState().main_process_first():  # resolved once, recorded in output_dir/sources.json; relaunch reuses
        _, environment, adapter = run_sources(
            training_args.output_dir, interface=script_args.interface, adapter=script_args.init_adapter
        )
    if adapter is not None:
        check_base_model(adapter, model_args.model_name_or_path, model_args.model_revision)
    model, tokenizer = load_policy(model_args, trust_remote_code=training_args.trust_remote_code)
    last = last_checkpoint(training_args.output_dir)  # a relaunch resumes; an unfinished checkpoint is skipped
    peft_config = lora_config(model_args)
    if adapter is not None:  # the policy starts from the published adapter, with its own LoRA configuration
        model = attach_policy(model, adapter, trainable=True, merge=not model_args.use_peft)
        if adapter.value.kind == "adapter":  # a full fine-tune's weights: the base model, LoRA'd as configured
            peft_config = None
    plan = held_out_plan(suite, script_args, training_args) if script_args.held_out_comparison else None
    base_record = {"id": model_args.model_name_or_path, "revision": model_args.model_revision}
    main_process = PartialState().is_main_process
    if plan is not None and last is None and main_process:
        merge = bool(training_args.merge_lora_for_generation)
        evaluate_stage(plan, model, tokenizer, stage_dir(training_args.output_dir, "base"), base_record, None, merge)
    if script_args.sft_warmup_steps and last is None:  # a resumed run already has its warmed-up adapter
        model = get_peft_model(model, peft_config) if peft_config is not None else model
        peft_config = None
        warm_up(model, tokenizer, suite, tasks, script_args, training_args, model_args)
        if plan is not None and main_process:
            warm = {"id": f"{model_args.model_name_or_path} + SFT warm-up ({script_args.sft_warmup_steps} steps)"}
            out = stage_dir(training_args.output_dir, "warmup")
            merge = bool(training_args.merge_lora_for_generation)
            evaluate_stage(plan, model, tokenizer, out, warm | base_record, None, merge)
    publisher = publish_callback(script_args, model_args)
    trainer = SealTrainer(
        model,
        args=training_args,
        processing_class=tokenizer,
        callbacks=[publisher] if publisher is not None else None,
        peft_config=peft_config,
        suite=suite,
        train_tasks=tasks,
        interface=derive_interface(environment) if environment is not None else None,
        policy_id=model_args.model_name_or_path,
        held_out_tasks=held_out_tasks(
            suite, task_split(suite, script_args).test, training_args.eval_tasks, script_args.categories
        )
        if training_args.eval_every_steps
        else None,
        held_out_at_end=plan is None,  # with the comparison, its final stage is the last step's evaluation
    )
    trainer.train(resume_from_checkpoint=last)
    kill_point("save")
    trainer.save_model(training_args.output_dir)
    if not trainer.accelerator.is_main_process:
        return
    if trainer.completed_at is not None:
        budget = (
            f"max_steps {training_args.max_steps}"
            if training_args.max_steps > 0
            else f"num_train_epochs {training_args.num_train_epochs:g}"
        )
        print(
            f"SEAL run {training_args.output_dir} is already complete at step {trainer.completed_at} ({budget}): "
            f"nothing to train; to extend it, relaunch with a larger --max_steps "
            f"(e.g. --max_steps {2 * trainer.completed_at})"
        )
    else:
        print_summary(training_args.output_dir, trainer)
    if plan is not None:
        print("\n".join(final_comparison(plan, trainer, tokenizer, base_record, training_args.output_dir)))


def warm_up(model, tokenizer, suite: Suite, tasks, script_args, training_args: SealConfig, model_args) -> None:
    """The SFT warm-up on the training tasks' answers, or the shared one `sft_warmup_dir` already holds."""
    steps = script_args.sft_warmup_steps

    def train() -> None:
        run_warmup(
            model,
            tokenizer,
            warmup_dataset(suite, tasks, tokenizer),
            steps,
            output_dir=str(Path(training_args.output_dir) / "sft-warmup"),
            learning_rate=script_args.sft_learning_rate,
            frozen_context=script_args.sft_frozen_context,
            use_cpu=training_args.use_cpu,
            bf16=training_args.bf16,
            per_device_train_batch_size=1,  # one conversation a pass, accumulated: no padding to compute
            gradient_accumulation_steps=script_args.sft_batch_size,
            max_length=training_args.max_context_tokens,
            seed=training_args.seed,
            gradient_checkpointing=training_args.gradient_checkpointing,  # TRL's SFTConfig would default to True
        )

    if script_args.sft_warmup_dir is None:
        train()
        return
    if not hasattr(model, "peft_config"):
        raise WarmupMismatchError("sft_warmup_dir shares a LoRA warm-up: it needs use_peft true")
    settings = {
        "model": [model_args.model_name_or_path, model_args.model_revision],
        "lora": [model_args.lora_r, model_args.lora_alpha, model_args.lora_target_modules],
        "tasks": [task.id for task in tasks],
        "steps": steps,
        "learning_rate": script_args.sft_learning_rate,
        "batch_size": script_args.sft_batch_size,
        "seed": training_args.seed,
        "max_length": training_args.max_context_tokens,
    }
    if script_args.sft_frozen_context:  # only when on: warm-ups shared before the option existed stay valid
        settings["frozen_context"] = True
    state = PartialState()
    loaded = shared_warmup(
        model, script_args.sft_warmup_dir, settings, train, state.is_main_process, state.wait_for_everyone
    )
    if loaded and state.is_main_process:
        print(f"SFT warm-up: loaded the shared one in {script_args.sft_warmup_dir} ({steps} steps, same settings)")


def final_comparison(plan: HeldOutPlan, trainer: SealTrainer, tokenizer, base_record, output_dir: str) -> list[str]:
    """The final policy on the held-out tasks, recorded as the adapter published at the last iteration (and
    the result published on its card, as `seal-hub eval --publish` does); then the comparison's lines."""
    from seal_hub.hub.sources import resolve_reference

    step = trainer.state.global_step
    adapter_record, reproduce, repo = None, None, None
    if trainer.publish is not None and step > 0:  # the adapter these weights are, as published
        registry = trainer.publish.registry()
        ref = f"{trainer.publish.repos.adapter}@iter-{step}"
        resolved = resolve_reference(ref, "adapter", registry=registry).source
        adapter_record = {"ref": ref, "repo": resolved.repo_id, "revision": resolved.revision}
        adapter_record |= {"commit": resolved.commit, "backend": resolved.backend}
        scheme = "local://" if resolved.backend == "local" else ""
        reproduce = f"seal-hub eval --model {base_record['id']} --adapter {scheme}{ref} {plan.eval_flags()}"
        repo = f"{trainer.publish.run}-eval"
    final = stage_dir(output_dir, "final")
    merge = bool(trainer.args.merge_lora_for_generation)
    result = evaluate_stage(plan, trainer.model, tokenizer, final, base_record, adapter_record, merge)
    lines = []
    if repo is not None:
        from seal_hub.evaluation.publish import publish_evaluation

        lines += publish_evaluation(final, repo, registry)
    stages = {s: read_stage(stage_dir(output_dir, s)) for s in ("base", "warmup")}
    stages = {s: scores for s, scores in stages.items() if scores is not None}
    stages |= held_out_curve(output_dir, before_step=step) | {"final": result.scores}
    if step > 0:  # the curve's last point, where `seal-hub report` reads the training-time evaluations
        write_held_out(output_dir, stage_point(result, step, plan.protocol))
    return lines + comparison_lines(plan, stages, reproduce, final_step=step)


def print_summary(output_dir: str, trainer: SealTrainer) -> None:
    metrics = read_metrics(output_dir)
    print("\nSEAL run summary")
    print(f"{'step':>5} {'success':>8} {'mean w':>7} {'interface':>9}  top labels")
    for m in metrics:
        labels = sorted(m["label_profile"]["labels"].items(), key=lambda kv: -kv[1]["prevalence"])[:3]
        shown = ", ".join(f"{name} {v['prevalence']:.2f}" for name, v in labels)
        print(
            f"{m['step']:>5} {m['success_rate']:>8.1%} {m['mean_weight']:>7.3f} {m['interface_version']:>9}  {shown}"
        )
    print(f"environment versions: {', '.join(trainer.store.versions())} (now {trainer.interface.version})")
    print("rho: " + ", ".join(f"{k}={v:.3f}" for k, v in trainer.window.rho.items() if v != 1.0))
    print(f"artifacts: {Path(output_dir).resolve()} (iterations/, interfaces/, checkpoint-*/, adapter)")
    if trainer.publish is not None:
        repos = trainer.publish.repos
        print(
            f"published: {repos.trajectories}, {repos.environment}, {repos.adapter} "
            "(`seal-hub hub list` shows their versions)"
        )


def make_parser(prog: str | None = None) -> TrlParser:
    """The script's arguments, TRL style: `SealScriptArguments`, `SealConfig` and `PolicyConfig`, from a YAML
    file (`--config`) with flags overriding it; the flags are the field names."""
    return TrlParser((SealScriptArguments, SealConfig, PolicyConfig), prog=prog)


DEMO_SUITE_KEYS = ("categories", "num_train_tasks")  # the demo config's choice of bfcl-single tasks


def with_default_config(argv: Sequence[str]) -> list[str]:
    """`argv` with `--config PATH` (also given as `--config=PATH`), or the packaged CPU demo's when it has none."""
    argv = list(argv)
    for i, arg in enumerate(argv):
        if arg.startswith("--config="):
            return [*argv[:i], "--config", arg.split("=", 1)[1], *argv[i + 1 :]]
    return argv if "--config" in argv else ["--config", str(DEFAULT_CONFIG), *argv]


def run(argv: Sequence[str] | None = None, prog: str = "seal-hub train") -> int:
    """Parse `argv` (default: the command line) and train; the process exit code. A config the dataclasses
    refuse, or a published reference to fix, is one line on stderr and exit code 2, no traceback. A user
    environment on the CPU demo's config (no --config) keeps the demo's settings but not its suite's task choice
    (`DEMO_SUITE_KEYS`, unless given as flags)."""
    given = list(sys.argv[1:] if argv is None else argv)
    argv = with_default_config(given)
    try:
        args = make_parser(prog).parse_args_and_config(argv)
    except (ValueError, OSError) as exc:  # the field and the fix (`__post_init__`), or an unreadable --config
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    if args[0].environment is not None and argv != given:  # the demo's config under a user environment
        for key in DEMO_SUITE_KEYS:
            if f"--{key}" not in given:
                setattr(args[0], key, None)
    try:
        main(*args)
    except (
        HubError,
        SourceError,
        InterfaceError,
        SuiteError,
        SplitError,
        WarmupMismatchError,
        TooFewTasksError,
    ) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # accelerate launch -m seal_hub.scripts.seal [--config ...]
    sys.exit(run(prog="seal_hub.scripts.seal"))
