"""SEAL: train a tool-use policy and its learning environment together, on BFCL v3 multi-turn.

Launch (the CPU demo is the default when no --config is given):

    accelerate launch recipes/seal.py
    accelerate launch recipes/seal.py --config recipes/configs/demo_cpu.yaml --max_steps 4
    accelerate launch --config_file recipes/accelerate/single_gpu.yaml recipes/seal.py \
        --config recipes/configs/qwen2.5-7b-qlora.yaml
    accelerate launch --config_file recipes/accelerate/zero3.yaml recipes/seal.py \
        --config recipes/configs/paper_full_ft.yaml

Ablations of the paper, same recipe and budget: `--env_adaptation false`, `--reweighting false`,
`--closed_loop false`; all three false is vanilla GRPO. `--sft_warmup_steps N` first fits the training
tasks' ground truth with SFT (format teaching for small models; off by default). Relaunching with the same
`--output_dir` resumes from its last complete checkpoint; a run that already reached `max_steps` trains
nothing more (it saves the final adapter and publishes what a kill left unpublished, then says it is
complete); relaunch with a larger `--max_steps` to extend it.

Arguments: `SealScriptArguments` below, `seal_hub.trainer.SealConfig` (TRL's GRPOConfig plus SEAL's fields)
and `seal_hub.models.PolicyConfig` (TRL's ModelConfig); YAML keys and flags are the field names.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch
from peft import get_peft_model
from trl import TrlParser

from seal_hub.envs.bfcl import BfclSuite, load_split, stratified_split
from seal_hub.hub import PublishConfig
from seal_hub.kill_points import kill_point
from seal_hub.models import PolicyConfig, load_policy, lora_config
from seal_hub.run_records import last_checkpoint, read_metrics
from seal_hub.trainer import SealConfig, SealTrainer
from seal_hub.warmup import run_warmup, warmup_dataset

DEFAULT_CONFIG = Path(__file__).parent / "configs" / "demo_cpu.yaml"


@dataclass
class SealScriptArguments:
    suite: str = field(default="bfcl", metadata={"help": "Environment suite.", "choices": ["bfcl"]})
    split_file: str | None = field(
        default=None, metadata={"help": "JSON with 'train'/'test' task ids; default: a stratified split (split_seed)."}
    )
    split_seed: int = field(default=0, metadata={"help": "Seed of the stratified split when no split_file."})
    num_train_tasks: int | None = field(default=None, metadata={"help": "Train on the first N tasks (all if unset)."})
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
    sft_warmup_steps: int = field(
        default=0,
        metadata={"help": "SFT steps on the training tasks' ground truth before SEAL (format teaching); 0: none."},
    )
    sft_learning_rate: float = field(default=1e-4, metadata={"help": "Learning rate of the SFT warm-up."})
    task_order: str = field(
        default="split",
        metadata={
            "help": "'split': the split's order; 'shortest': shortest episodes first (CPU demos).",
            "choices": ["split", "shortest"],
        },
    )


def training_tasks(suite: BfclSuite, args: SealScriptArguments):
    split = (
        load_split(args.split_file, known_ids=set(suite.tasks))
        if args.split_file
        else stratified_split(suite.tasks, seed=args.split_seed)
    )
    tasks = suite.select(split.train)
    if args.task_order == "shortest":
        tasks.sort(key=lambda task: (prompt_size(suite, task), task.id))
    return tasks[: args.num_train_tasks] if args.num_train_tasks else tasks


CHARS_PER_TURN = 400  # about one model reply of ~100 tokens per user turn


def prompt_size(suite: BfclSuite, task) -> int:
    """A tokenizer-free proxy for an episode's length in characters: the first prompt (tool schemas and
    first user turn), the later user turns, and room for one reply per turn."""
    episode = suite.episode(task)
    observation = episode.reset()
    episode.close()
    user_text = sum(len(m.content) for turn in task.turns for m in turn)
    return len(str(observation.tools)) + user_text + CHARS_PER_TURN * task.num_turns


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
    suite = BfclSuite()
    tasks = training_tasks(suite, script_args)
    model, tokenizer = load_policy(model_args, trust_remote_code=training_args.trust_remote_code)
    last = last_checkpoint(training_args.output_dir)  # a relaunch resumes; an unfinished checkpoint is skipped
    peft_config = lora_config(model_args)
    if script_args.sft_warmup_steps and last is None:  # a resumed run already has its warmed-up adapter
        model = get_peft_model(model, peft_config) if peft_config is not None else model
        peft_config = None
        run_warmup(
            model,
            tokenizer,
            warmup_dataset(suite, tasks),
            script_args.sft_warmup_steps,
            output_dir=str(Path(training_args.output_dir) / "sft-warmup"),
            learning_rate=script_args.sft_learning_rate,
            use_cpu=training_args.use_cpu,
            bf16=training_args.bf16,
            per_device_train_batch_size=1,
            max_length=training_args.max_context_tokens,
            seed=training_args.seed,
        )
    trainer = SealTrainer(
        model,
        training_args,
        suite,
        tasks,
        tokenizer,
        peft_config=peft_config,
        policy_id=model_args.model_name_or_path,
        publish=PublishConfig(
            run=script_args.publish_run, backend=script_args.publish_backend, base_model=model_args.model_name_or_path
        )
        if script_args.publish_run
        else None,
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
    print(f"interface versions: {', '.join(trainer.store.versions())} (now {trainer.interface.version})")
    print("rho: " + ", ".join(f"{k}={v:.3f}" for k, v in trainer.window.rho.items() if v != 1.0))
    print(f"artifacts: {Path(output_dir).resolve()} (iterations/, interfaces/, checkpoint-*/, adapter)")
    if trainer.publish is not None:
        repos = trainer.publish.repos
        print(
            f"published: {repos.trajectories}, {repos.environment}, {repos.adapter} "
            "(`seal-hub hub list` shows their versions)"
        )


if __name__ == "__main__":
    if "--config" not in sys.argv and not any(a.startswith("--config=") for a in sys.argv):
        sys.argv[1:1] = ["--config", str(DEFAULT_CONFIG)]
    parser = TrlParser((SealScriptArguments, SealConfig, PolicyConfig))
    main(*parser.parse_args_and_config())
