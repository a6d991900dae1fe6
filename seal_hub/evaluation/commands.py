"""`seal-hub eval`: score a policy on a suite's held-out tasks with the paper's protocol (original interface,
greedy, BFCL's own step limits), resumable, with `--publish` recording the result on the adapter's card.

`--model oracle` replays the suite's reference answers through the same harness: the check that a suite's
protocol and verdicts hold before any model is scored. The options are `EvalArguments`' fields (with
`seal_hub.cli_args`' task and environment fields), parsed with `HfArgumentParser` as training's are.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from seal_hub.cli_args import PARSER_STYLE_HELP, EnvironmentArguments, TaskArguments, add_command
from seal_hub.defaults import EVAL_MAX_NEW_TOKENS, MAX_CONTEXT_TOKENS, MAX_LIVE_EPISODES


@dataclass(kw_only=True)
class EvalArguments(TaskArguments, EnvironmentArguments):
    """`seal-hub eval`'s options: the policy and how it is scored, on the tasks `TaskArguments` select."""

    model: str = field(metadata={"help": "'tiny', 'demo', a Hub id, a local path, or 'oracle'"})
    adapter: str | None = field(
        default=None, metadata={"help": "a published adapter: ns/name@iter-3, hf://..., local://..."}
    )
    interface: str = field(default="null", metadata={"help": "'null' (the paper's protocol), a snapshot file or ref"})
    output_dir: str = field(default="eval", metadata={"help": "output directory (rerun with the same one to resume)"})
    max_new_tokens: int = field(default=EVAL_MAX_NEW_TOKENS, metadata={"help": "tokens per model step"})
    max_context_tokens: int = field(
        default=MAX_CONTEXT_TOKENS, metadata={"help": "longest token sequence of one episode"}
    )
    max_live_episodes: int = field(default=MAX_LIVE_EPISODES, metadata={"help": "episodes generated together"})
    generation_dtype: str = field(
        default="auto",
        metadata={
            "help": "the dtype the policy generates in (seal_hub.generation.weights): auto, bfloat16 for an fp32 "
            "policy on a CPU with AMX or AVX512-BF16, as training's rollouts; recorded in results.json",
            "choices": ["auto", "float32", "bfloat16"],
        },
    )
    merge_lora_for_generation: bool | None = field(
        default=None,
        metadata={
            "help": "generate with an --adapter's LoRA merged into a copy of the adapted weights, as training's "
            "rollouts and held-out evaluations do (seal_hub.generation.weights); unset: on for a CPU model, off on "
            "a GPU"
        },
    )
    parser_style: str | None = field(default=None, metadata=PARSER_STYLE_HELP)
    publish: str | None = field(
        default=None,
        metadata={
            "metavar": "REPO",
            "help": "push the records as dataset REPO (ns/name, local:// or hf://) and record the result on the "
            "adapter's card (model-index) at a new revision",
        },
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.model == "oracle" and self.adapter:
            raise ValueError("--model oracle replays the suite's reference answers; it takes no --adapter")
        if self.publish is not None and not self.adapter:
            raise ValueError("--publish records the scores on the evaluated adapter's card: give --adapter REF")


def _eval_spec_model(args: EvalArguments, config, model) -> dict:
    """The evaluated model's id and revision (the commit transformers resolved, when it knows one)."""
    name = "tiny" if args.model == "tiny" else config.model_name_or_path  # tiny lives in a local cache
    revision = config.model_revision or getattr(getattr(model, "config", None), "_commit_hash", None)
    return {"id": name, "revision": revision}


def _eval_adapter(ref_text: str):
    """The adapter resolved once to a commit (`resolve_reference`), and its record for results.json: the
    reference as given, the repository, revision, commit and registry backend."""
    from seal_hub.hub.sources import resolve_reference

    resolved = resolve_reference(ref_text, "adapter")
    source = resolved.source
    record = {"ref": ref_text, "repo": source.repo_id, "revision": source.revision, "commit": source.commit}
    return resolved, record | {"backend": source.backend}


def _eval(args: EvalArguments) -> int:
    import dataclasses

    from seal_hub.envs.builtin import resolve_suite
    from seal_hub.evaluation import (
        EvalProtocol,
        EvalSpec,
        OracleRunner,
        evaluate_policy,
        interface_record,
        run_evaluation,
    )
    from seal_hub.hub.loading import load_interface
    from seal_hub.hub.sources import check_base_model
    from seal_hub.interface import InterfaceSnapshot

    if args.publish is not None:
        from seal_hub.hub.registry import HubError, Ref

        if Ref.parse(args.publish, "dataset").revision is not None:
            raise HubError(f"--publish {args.publish}: give a repository without '@revision'")
    loaded = None if args.interface in (None, "null") else load_interface(args.interface)
    record = loaded.user_environment if loaded is not None and args.environment is None else None
    suite = resolve_suite(args.suite, record=record, **args.environment_options())  # a user env's version: its own
    tasks = args.select(suite)  # a subset: its categories taken in turn (as held-out subsets)
    interface = loaded if loaded is not None else InterfaceSnapshot.null(suite.name)
    protocol = EvalProtocol(
        max_new_tokens=args.max_new_tokens,
        max_context_tokens=args.max_context_tokens,
        parser_style=args.parser_style,
        max_live_episodes=args.max_live_episodes,
    )
    adapter = resolved = None
    if args.adapter:  # resolved before any model loads, so a bad reference fails at once
        resolved, adapter = _eval_adapter(args.adapter)
        if args.publish is not None:
            from seal_hub.evaluation.publish import check_adapter_head

            check_adapter_head(adapter)  # before the run, not after it

    def spec(model_record: dict) -> EvalSpec:
        return EvalSpec(
            suite=suite.name,
            split=args.split,
            split_source=args.split_source(suite),
            model=model_record,
            adapter=adapter,
            interface=interface_record(interface, args.interface or "null"),
        )

    progress = not args.no_progress
    if args.model == "oracle":
        runner = OracleRunner(suite, protocol.episode_config(), interface.version)
        oracle = dataclasses.replace(spec({"id": "oracle", "revision": None}), protocol=protocol.as_dict())
        result = run_evaluation(suite, tasks, runner, oracle, args.output_dir, progress=progress)
    else:
        from seal_hub.generation.weights import (
            GenerationWeights,
            backend_for,
            merges_by_default,
            with_generation_dtype,
        )
        from seal_hub.models import load_for_inference
        from seal_hub.rollout import PolicyInfo

        if resolved is not None:  # before the model loads: an adapter of another base fails at once
            check_base_model(resolved, args.model)
        model, tokenizer, config = load_for_inference(args.model)
        model_record = _eval_spec_model(args, config, model)
        if resolved is not None:
            from seal_hub.hub.sources import attach_policy

            model = attach_policy(model, resolved)
        model.eval()
        policy_id = adapter["repo"] if adapter else model_record["id"]
        info = PolicyInfo(policy_id, adapter["commit"] if adapter else model_record["revision"])
        merge = args.merge_lora_for_generation
        if merge is None:
            merge = merges_by_default(model)
        with backend_for(model, tokenizer, GenerationWeights(merge, args.generation_dtype)) as (backend, dtype):
            record = spec(with_generation_dtype(model_record, dtype))
            result = evaluate_policy(
                backend, tokenizer, info, suite, tasks, protocol, interface, record, args.output_dir, progress
            )
    print(result.scores.table(suite.name))
    print(f"wrote {result.out} ({result.ran} task(s) run, {len(tasks) - result.ran} resumed)")
    if args.publish:
        from seal_hub.evaluation.publish import publish_evaluation

        for line in publish_evaluation(result.out, args.publish):
            print(line)
    print(f"eval {suite.name}: avg {result.scores.average:.2f} on {result.scores.num_tasks} tasks")
    return 0


def add_eval_command(commands: argparse._SubParsersAction) -> None:
    add_command(
        commands,
        "eval",
        EvalArguments,
        _eval,
        help="score a policy on a suite's held-out tasks (the paper's protocol)",
    )
