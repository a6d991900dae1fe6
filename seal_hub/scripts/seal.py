"""SEAL: train a tool-use policy and its learning environment together (docs/training.md).

The training script, in the package: `seal-hub train` runs it in this process, `recipes/seal.py` is its
`accelerate launch` entry in a checkout, `-m seal_hub.scripts.seal` launches it from a wheel. Without --config it
runs the CPU demo (`seal_hub/scripts/configs/demo_cpu.yaml`, package data; flags override it):

    seal-hub train --max_steps 4
    accelerate launch recipes/seal.py
    accelerate launch --config_file recipes/accelerate/single_gpu.yaml recipes/seal.py \
        --config recipes/configs/qwen2.5-7b-qlora.yaml
    accelerate launch --config_file recipes/accelerate/zero3.yaml -m seal_hub.scripts.seal \
        --config recipes/configs/paper_full_ft.yaml

Arguments, parsed together by TrlParser (YAML keys and flags are the field names): `SealScriptArguments` below,
`SealConfig` (GRPOConfig plus SEAL's fields), `PolicyConfig` (TRL's ModelConfig), `TaskArguments` (suite or your
environment, split, categories: `seal_hub.training.selection`) and `WarmupArguments` (`sft_*`). Where to read more:
suites, ablations, the warm-up and the held-out comparison in docs/training.md; your own environment in
docs/environments.md; relaunch and resume in docs/reliability.md; published starts (`--interface`, `--init_adapter`)
in docs/hub.md.
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
import yaml
from accelerate import PartialState
from trl import TrlParser

from seal_hub.envs.splits import SplitError
from seal_hub.envs.suite import SuiteError
from seal_hub.hub import HubError, PublishConfig
from seal_hub.hub.callback import PublishCallback
from seal_hub.hub.sources import SourceError, attach_policy, check_base_model, derive_interface, run_sources
from seal_hub.interface import InterfaceError
from seal_hub.models import PolicyConfig, load_policy, lora_config
from seal_hub.training import SealConfig, SealTrainer
from seal_hub.training.comparison import HeldOutComparison
from seal_hub.training.loop_state import kill_point
from seal_hub.training.run_records import last_checkpoint
from seal_hub.training.selection import TaskArguments, TooFewTasksError, environment_run_name, select_tasks
from seal_hub.training.summary import run_summary
from seal_hub.training.warmup import WarmupArguments, WarmupMismatchError, warm_up

# the CPU demo, the default without --config (package data, its one copy)
DEFAULT_CONFIG = Path(str(resources.files("seal_hub.scripts").joinpath("configs", "demo_cpu.yaml")))


@dataclass
class SealScriptArguments:
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

    def __post_init__(self) -> None:
        if self.publish_private and not self.publish_run:
            raise ValueError("publish_private is set but publish_run is not: name the run ('namespace/name')")
        if self.publish_private and self.publish_backend == "local":
            raise ValueError("publish_private applies to the Hub only: set publish_backend hub (or auto), or drop it")


def main(
    script_args: SealScriptArguments,
    training_args: SealConfig,
    model_args: PolicyConfig,
    task_args: TaskArguments,
    warmup_args: WarmupArguments,
) -> None:
    use_cpu_cores()
    # the tasks, chosen once: what trains, and what the periodic evaluation and the comparison both score
    held_out = bool(training_args.eval_every_steps) or script_args.held_out_comparison
    tasks = select_tasks(task_args, training_args, held_out=held_out, warmup=warmup_args.sft_warmup_steps > 0)
    with PartialState().main_process_first():  # resolved once, recorded in output_dir/sources.json; relaunch reuses
        _, environment, adapter = run_sources(
            training_args.output_dir, interface=script_args.interface, adapter=script_args.init_adapter
        )
    publisher = publish_callback(script_args, model_args)
    if publisher is not None and PartialState().is_main_process:
        publisher.check_unclaimed(training_args.output_dir)  # before any work, not at the first step's publish
    if adapter is not None:
        check_base_model(adapter, model_args.model_name_or_path, model_args.model_revision)
    model, tokenizer = load_policy(model_args, trust_remote_code=training_args.trust_remote_code)
    last = last_checkpoint(training_args.output_dir)  # a relaunch resumes; an unfinished checkpoint is skipped
    peft_config = lora_config(model_args)
    if adapter is not None:  # the policy starts from the published adapter, with its own LoRA configuration
        model = attach_policy(model, adapter, trainable=True, merge=not model_args.use_peft)
        if adapter.value.kind == "adapter":  # a full fine-tune's weights: the base model, LoRA'd as configured
            peft_config = None
    comparison = None
    if script_args.held_out_comparison:
        base_record = {"id": model_args.model_name_or_path, "revision": model_args.model_revision}
        comparison = HeldOutComparison.of(tasks, training_args, base_record, PartialState().is_main_process)
    if comparison is not None and last is None:
        comparison.base(model, tokenizer)
    if warmup_args.sft_warmup_steps and last is None:  # a resumed run already has its warmed-up adapter
        model = warm_up(
            model, peft_config, tokenizer, tasks.suite, tasks.train, warmup_args, training_args, model_args
        )
        peft_config = None  # the warm-up's LoRA adapter is the one GRPO goes on training
        if comparison is not None:
            comparison.warmup(model, tokenizer, warmup_args.sft_warmup_steps)
    trainer = SealTrainer(
        model,
        args=training_args,
        processing_class=tokenizer,
        callbacks=[publisher] if publisher is not None else None,
        peft_config=peft_config,
        suite=tasks.suite,
        train_tasks=list(tasks.train),
        interface=derive_interface(environment) if environment is not None else None,
        policy_id=model_args.model_name_or_path,
        held_out_tasks=list(tasks.held_out) if training_args.eval_every_steps else None,
        held_out_at_end=comparison is None,  # with the comparison, its final stage is the last step's evaluation
    )
    trainer.train(resume_from_checkpoint=last)
    kill_point("save")
    trainer.save_model(training_args.output_dir)
    if trainer.accelerator.is_main_process:
        print(run_summary(trainer))
        if comparison is not None:
            print("\n".join(comparison.final(trainer, tokenizer)))
    trainer.accelerator.end_training()  # every rank ends its process group (docs/reliability.md: clean exit)


def publish_callback(script_args: SealScriptArguments, model_args: PolicyConfig) -> PublishCallback | None:
    """The callback that publishes the run (`--publish_run`, `--publish_backend`, `--publish_private`; the cards name
    `model_name_or_path` as the base model), or None: publish nothing. The one publishing surface of a run:
    `SealConfig` refuses transformers' `push_to_hub` / `hub_model_id` / `hub_private_repo`."""
    if not script_args.publish_run:
        return None
    publish = PublishConfig(
        run=script_args.publish_run,
        backend=script_args.publish_backend,
        private=script_args.publish_private,
        base_model=model_args.model_name_or_path,
    )
    return PublishCallback(publish)


def use_cpu_cores() -> None:
    """`accelerate launch` sets OMP_NUM_THREADS=1; without a GPU, give each process its share of the cores.
    SEAL_HUB_CPU_THREADS overrides the share."""
    if torch.cuda.is_available():
        return
    share = (os.cpu_count() or 1) // int(os.environ.get("WORLD_SIZE", "1"))
    torch.set_num_threads(max(1, int(os.environ.get("SEAL_HUB_CPU_THREADS", share))))


def make_parser(prog: str | None = None) -> TrlParser:
    """The script's arguments, TRL style, from a YAML file (`--config`) with flags overriding it."""
    return TrlParser((SealScriptArguments, SealConfig, PolicyConfig, TaskArguments, WarmupArguments), prog=prog)


DEMO_SUITE_KEYS = ("categories", "num_train_tasks")  # the demo config's choice of bfcl-single tasks


def with_default_config(argv: Sequence[str]) -> list[str]:
    """`argv` with `--config PATH` (also given as `--config=PATH`), or the packaged CPU demo's when it has none."""
    argv = list(argv)
    for i, arg in enumerate(argv):
        if arg.startswith("--config="):
            return [*argv[:i], "--config", arg.split("=", 1)[1], *argv[i + 1 :]]
    return argv if "--config" in argv else ["--config", str(DEFAULT_CONFIG), *argv]


def parse_args(argv: Sequence[str], prog: str | None = None) -> tuple:
    """The five argument records of `argv` (`with_default_config`). A user environment on the CPU demo's config
    (no --config) keeps the demo's settings but neither its task choice (`DEMO_SUITE_KEYS`) nor its run's name
    (`environment_run_name`); flags win: parsed again with those defaults, never rewritten after parsing."""
    given = list(argv)
    args = make_parser(prog).parse_args_and_config(with_default_config(given))
    if args[3].environment is None or with_default_config(given) == given:
        return args
    demo = {k: v for k, v in yaml.safe_load(DEFAULT_CONFIG.read_text("utf-8")).items() if k not in DEMO_SUITE_KEYS}
    name = environment_run_name(args[3].environment)
    demo |= {"publish_run": f"demo/{name}", "output_dir": f"outputs/{name}"}
    parser = make_parser(prog)
    parser.set_defaults_with_config(**demo)
    return parser.parse_args_and_config(given)


def run(argv: Sequence[str] | None = None, prog: str = "seal-hub train") -> int:
    """Parse `argv` (default: the command line) and train; the process exit code. A config the dataclasses
    refuse, or a published reference to fix, is one line on stderr and exit code 2, no traceback."""
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv, prog)
    except (ValueError, OSError) as exc:  # the field and the fix (`__post_init__`), or an unreadable --config
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    refused = (HubError, SourceError, InterfaceError, SuiteError, SplitError, WarmupMismatchError, TooFewTasksError)
    try:
        main(*args)
    except refused as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # accelerate launch -m seal_hub.scripts.seal [--config ...]
    sys.exit(run(prog="seal_hub.scripts.seal"))
