"""`seal-hub rollout`: roll a policy out on a suite's tasks and write trajectories (Parquet).

The policy is `--model` (tiny, demo, a Hub id or a path), optionally with a published adapter on it and a
published environment version applied; both are resolved once to commits and recorded in `--output_dir/sources.json`,
so the trajectories say exactly what produced them. Training does not go through here (`seal-hub train`).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from seal_hub.cli_args import PARSER_STYLE_HELP, EnvironmentArguments, TaskArguments, add_command
from seal_hub.defaults import MAX_CONTEXT_TOKENS, MAX_LIVE_EPISODES


@dataclass(kw_only=True)
class RolloutArguments(TaskArguments, EnvironmentArguments):
    """`seal-hub rollout`'s options: the policy, its published sources and its sampling, on the tasks
    `TaskArguments` select (`--seed` seeds the sampling only; `--split_seed` the stratified split)."""

    output_dir: str = field(metadata={"help": "directory for trajectories.parquet"})
    model: str | None = field(
        default=None, metadata={"help": "'tiny', 'demo' (SmolLM2-135M), a Hub id or a path (default: demo)"}
    )
    interface: str | None = field(
        default=None, metadata={"help": "a published environment version to apply: ns/name-env@v3"}
    )
    adapter: str | None = field(
        default=None,
        metadata={"help": "a published adapter on the policy: ns/name-adapter@iter-3 (--model defaults to its base)"},
    )
    num_generations: int = field(default=1, metadata={"help": "rollouts per task"})
    max_live_episodes: int = field(default=MAX_LIVE_EPISODES, metadata={"help": "episodes generated together"})
    temperature: float = field(default=1.0, metadata={"help": "sampling temperature (0: greedy)"})
    top_p: float = field(default=1.0, metadata={"help": "nucleus sampling mass"})
    top_k: int = field(default=0, metadata={"help": "sample among the k likeliest tokens (0: all)"})
    max_new_tokens: int = field(default=256, metadata={"help": "tokens per model step"})
    max_context_tokens: int = field(
        default=MAX_CONTEXT_TOKENS, metadata={"help": "longest token sequence of one episode"}
    )
    parser_style: str | None = field(default=None, metadata=PARSER_STYLE_HELP)
    seed: int = field(default=0, metadata={"help": "sampling seed"})


def _rollout(args: RolloutArguments) -> int:
    import time
    from pathlib import Path

    from seal_hub.envs.builtin import resolve_suite
    from seal_hub.generation import SamplingConfig, build_hf_backend
    from seal_hub.models import load_for_inference
    from seal_hub.rollout import PolicyInfo, RolloutConfig, RolloutEngine, write_trajectories

    suite = resolve_suite(args.suite, **args.environment_options())
    tasks = args.select(suite)
    interface, adapter, model_name = _sources(args)
    model, tokenizer, policy = load_for_inference(model_name)
    info = PolicyInfo(policy.model_name_or_path, policy.model_revision)
    if adapter is not None:
        from seal_hub.hub.sources import attach_policy

        model = attach_policy(model, adapter)
        info = PolicyInfo(adapter.source.ref, adapter.source.commit)
    config = RolloutConfig(
        num_generations=args.num_generations,
        max_live_episodes=args.max_live_episodes,
        max_context_tokens=args.max_context_tokens,
        parser_style=args.parser_style,
        sampling=SamplingConfig(args.temperature, args.top_p, args.max_new_tokens, args.seed, top_k=args.top_k),
    )
    backend = build_hf_backend(model, tokenizer, seed=args.seed)
    snapshot = interface.value if interface is not None else None
    engine = RolloutEngine(backend, tokenizer, suite, config, info, snapshot)
    start = time.perf_counter()
    trajectories = engine.run(tasks, progress=not args.no_progress)
    seconds = time.perf_counter() - start
    path = write_trajectories(trajectories, Path(args.output_dir) / "trajectories.parquet")
    episodes = len(trajectories)
    passed = sum(t.passed for t in trajectories)
    steps = sum(t.num_steps for t in trajectories)
    tokens = sum(t.num_generated_tokens for t in trajectories)
    truncated = sum(t.truncated for t in trajectories)
    print(f"wrote {path}")
    print(
        f"episodes {episodes}  success rate {passed / episodes:.1%} ({passed}/{episodes})  steps {steps} "
        f"({steps / episodes:.1f}/episode)  truncated {truncated}  generated tokens {tokens} "
        f"({tokens / seconds:.1f} tokens/s over {seconds:.1f} s)"
    )
    print(f"KV cache: {backend.reused_tokens} prompt tokens reused, {backend.prefilled_tokens} prefilled")
    for resolved in (interface, adapter):
        if resolved is not None:
            print(f"{resolved.source.role}: {resolved.source.describe()}")
    return 0


def _sources(args: RolloutArguments):
    """--interface / --adapter resolved once to commits and recorded in --output_dir/sources.json; the model to load
    (--model, else the adapter's base, else the demo model), checked against the adapter's base."""
    from seal_hub.hub.sources import RunSources, check_base_model, resolve_reference

    interface = resolve_reference(args.interface, "environment") if args.interface else None
    adapter = resolve_reference(args.adapter, "adapter") if args.adapter else None
    name = args.model or (adapter.value.base if adapter is not None else "demo")
    if adapter is not None:
        check_base_model(adapter, name)
    sources = RunSources(*(r.source if r is not None else None for r in (interface, adapter)))
    if sources.all():
        sources.write(args.output_dir)
    return interface, adapter, name


def add_rollout_command(commands: argparse._SubParsersAction) -> None:
    helped = "roll a policy out on a suite's tasks and write trajectories"
    add_command(commands, "rollout", RolloutArguments, _rollout, help=helped)
