"""`seal-hub`: the command line.

Subcommands are added by the modules they drive; each handler returns the process exit code. Errors the
user can fix (a bad path, an unknown split) are printed as one line on stderr with exit code 2, never as a
traceback. `seal-hub train [--config ...]` hands the rest of its command line to the training script
(`seal_hub.scripts.seal`, TrlParser flags), as TRL's CLI does with `trl/scripts/`; it trains in this process
(`accelerate launch -m seal_hub.scripts.seal` for several processes).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from seal_hub.console import quiet_library_notices
from seal_hub.toolcalls import STYLES as PARSER_STYLES

PARSER_HELP = "tool-call format (default: the one the chat template writes)"


def _suite_tasks(args: argparse.Namespace):
    from seal_hub.envs.bfcl import BfclSuite, resolve_split

    suite = BfclSuite()
    if args.split == "all" and args.split_file is None:
        return suite, list(suite.tasks.values())
    split = resolve_split(args.split_file, known_ids=set(suite.tasks), seed=args.seed, tasks=suite.tasks)
    return suite, suite.select(split.ids(args.split))


def _verify_gt(args: argparse.Namespace) -> int:
    from seal_hub.envs.bfcl.replay import verify_ground_truth

    suite, tasks = _suite_tasks(args)
    report = verify_ground_truth(suite, tasks, progress=not args.no_progress)
    for task_id, error_type in report.failed:
        print(f"FAILED {task_id}: {error_type}")
    for task_id, ours, official in report.disagreements:
        print(f"DISAGREE {task_id}: ours={'pass' if ours else 'fail'} official={'pass' if official else 'fail'}")
    if report.quirks:
        count = len(report.quirks)
        print(f"note: {count} ground-truth call(s) that the default training configuration refuses or labels:")
        for quirk in report.quirks:
            print(f"  {quirk}")
    agree = report.checked - len(report.disagreements)
    print(
        f"verified {len(report.verified)}/{report.total} ground-truth episodes "
        f"(official checker agrees on {agree}/{report.checked})"
    )
    return 0 if not report.failed and not report.disagreements else 1


def _policy(name: str):
    """`tiny` (built once in the cache), `demo` (SmolLM2, offline from its GGUF), or a Hub id / local path."""
    from seal_hub.models import load_policy, named_policy_config, place_for_inference

    config = named_policy_config(name)
    model, tokenizer = load_policy(config)
    return place_for_inference(model, config), tokenizer, config


def _rollout(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from seal_hub.models import end_token_ids
    from seal_hub.rollout import (
        HFBackend,
        PolicyInfo,
        RolloutConfig,
        RolloutEngine,
        SamplingConfig,
        write_trajectories,
    )

    suite, tasks = _suite_tasks(args)
    if args.limit is not None:
        if args.limit < 1:
            raise ValueError(f"--limit must be >= 1, got {args.limit}")
        tasks = tasks[: args.limit]
    interface, adapter, model_name = _sources(args)
    model, tokenizer, policy = _policy(model_name)
    info = PolicyInfo(policy.model_name_or_path, policy.model_revision)
    if adapter is not None:
        from seal_hub.hub.sources import attach_adapter

        model = attach_adapter(model, adapter)
        info = PolicyInfo(adapter.source.ref, adapter.source.commit)
    config = RolloutConfig(
        num_generations=args.num_generations,
        max_live_episodes=args.max_live_episodes,
        max_context_tokens=args.max_context_tokens,
        parser_style=args.parser_style,
        sampling=SamplingConfig(args.temperature, args.top_p, args.max_new_tokens, args.seed, top_k=args.top_k),
    )
    backend = HFBackend(model, end_token_ids(model, tokenizer), tokenizer.pad_token_id or 0, seed=args.seed)
    snapshot = interface.value if interface is not None else None
    engine = RolloutEngine(backend, tokenizer, suite, config, info, snapshot)
    start = time.perf_counter()
    trajectories = engine.run(tasks, progress=not args.no_progress)
    seconds = time.perf_counter() - start
    path = write_trajectories(trajectories, Path(args.out) / "trajectories.parquet")
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


def _sources(args: argparse.Namespace):
    """--interface / --adapter resolved once to commits and recorded in --out/sources.json; the model to load
    (--model, else the adapter's base, else the demo model), checked against the adapter's base."""
    from seal_hub.hub.sources import RunSources, resolve_reference

    interface = resolve_reference(args.interface, "environment") if args.interface else None
    adapter = resolve_reference(args.adapter, "adapter") if args.adapter else None
    name = args.model or (adapter.value.base if adapter is not None else "demo")
    if adapter is not None:
        _check_base(adapter, name)
    sources = RunSources(*(r.source if r is not None else None for r in (interface, adapter)))
    if sources.all():
        sources.write(args.out)
    return interface, adapter, name


def _check_base(adapter, name: str) -> None:
    """The adapter's base model is the policy `name` ('demo' and 'tiny' are the packaged models), else one line."""
    from seal_hub.hub.sources import check_base_model
    from seal_hub.models import DEMO_MODEL_ID, cache_root

    shorthand = {"demo": DEMO_MODEL_ID, "tiny": str(cache_root() / "tiny-policy")}
    check_base_model(adapter, shorthand.get(name, name))


def _diagnose(args: argparse.Namespace) -> int:
    from pathlib import Path

    from seal_hub.diagnosis import DEFAULT_RHO, FailureProfile, Label, diagnose
    from seal_hub.envs.bfcl import BfclSuite
    from seal_hub.rollout import read_trajectories

    root = Path(args.traj_dir)
    files = sorted(root.rglob("*.parquet")) if root.is_dir() else [root]
    if not files or not files[0].exists():
        raise FileNotFoundError(f"no trajectory Parquet files under {root} (seal-hub rollout writes them)")
    trajectories = [t for path in files for t in read_trajectories(path)]
    suite = BfclSuite()
    diagnoses = [diagnose(t, suite.task(t.task_id)) for t in trajectories]
    profile = FailureProfile.of(diagnoses)
    print(f"{len(trajectories)} rollouts, {profile.turns} labelled turns, from {len(files)} file(s)")
    print(f"{'label':<20} {'turns':>6} {'prevalence':>11} {'mean reward':>12} {'rho':>6}")
    for label in Label:
        stats = profile.get(label)
        rho = DEFAULT_RHO[label]
        print(f"{label:<20} {stats.count:>6} {stats.prevalence:>11.3f} {stats.mean_reward:>12.3f} {rho:>6.2f}")
    weights = [d.weight() for d in diagnoses]
    mean_reward = sum(t.reward for t in trajectories) / len(trajectories)
    print(f"mean reward {mean_reward:.3f}  mean weight {sum(weights) / len(weights):.3f}")
    return 0


def _eval_spec_model(args: argparse.Namespace, config, model) -> dict:
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


def _eval(args: argparse.Namespace) -> int:
    from seal_hub.envs.suite import load_suite
    from seal_hub.evaluation import (
        EvalProtocol,
        EvalSpec,
        ModelRunner,
        OracleRunner,
        interface_record,
        run_evaluation,
    )
    from seal_hub.interface import InterfaceSnapshot

    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit must be >= 1, got {args.limit}")
    if args.model == "oracle" and args.adapter:
        raise ValueError("--model oracle replays the suite's reference answers; it takes no --adapter")
    if args.publish is not None:
        from seal_hub.hub.registry import HubError, Ref

        if not args.adapter:
            raise ValueError("--publish records the scores on the evaluated adapter's card: give --adapter REF")
        if Ref.parse(args.publish, "dataset").revision is not None:
            raise HubError(f"--publish {args.publish}: give a repository without '@revision'")
    suite = load_suite(args.suite)
    tasks = suite.select(suite.split_ids(args.split, args.split_file))
    tasks = tasks[: args.limit] if args.limit is not None else tasks
    interface = InterfaceSnapshot.null(suite.name) if args.interface in (None, "null") else _snapshot(args.interface)
    protocol = EvalProtocol(
        max_new_tokens=args.max_new_tokens,
        max_context_tokens=args.max_context_tokens,
        parser_style=args.parser_style,
        batch_size=args.max_live_episodes,
    )
    adapter = resolved = None
    if args.adapter:  # resolved before any model loads, so a bad reference fails at once
        resolved, adapter = _eval_adapter(args.adapter)
        if args.publish is not None:
            from seal_hub.evaluation.publish import check_adapter_head

            check_adapter_head(adapter)  # before the run, not after it
    if args.model == "oracle":
        runner = OracleRunner(suite, protocol.episode_config(), interface.version)
        model_record = {"id": "oracle", "revision": None}
    else:
        import dataclasses

        from seal_hub.models import end_token_ids
        from seal_hub.models.tool_style import resolve_tool_style
        from seal_hub.rollout import HFBackend, PolicyInfo, RolloutEngine

        if resolved is not None:  # before the model loads: an adapter of another base fails at once
            _check_base(resolved, args.model)
        model, tokenizer, config = _policy(args.model)
        model_record = _eval_spec_model(args, config, model)
        protocol = dataclasses.replace(protocol, parser_style=resolve_tool_style(tokenizer, protocol.parser_style))
        if resolved is not None:
            from seal_hub.hub.sources import attach_adapter

            model = attach_adapter(model, resolved)
        model.eval()
        backend = HFBackend(model, end_token_ids(model, tokenizer), tokenizer.pad_token_id or 0, seed=0)
        policy_id = adapter["repo"] if adapter else model_record["id"]
        info = PolicyInfo(policy_id, adapter["commit"] if adapter else model_record["revision"])
        engine = RolloutEngine(backend, tokenizer, suite, protocol.rollout_config(), info, interface)
        runner = ModelRunner(engine)
    spec = EvalSpec(
        suite=suite.name,
        split=args.split,
        split_source=args.split_file or ("paper" if suite.name == "bfcl" else "default"),
        model=model_record,
        adapter=adapter,
        interface=interface_record(interface, args.interface or "null"),
        protocol=protocol.as_dict(),
    )
    result = run_evaluation(suite, tasks, runner, spec, args.out, progress=not args.no_progress)
    print(result.scores.table(suite.name))
    print(f"wrote {result.out} ({result.ran} task(s) run, {len(tasks) - result.ran} resumed)")
    if args.publish:
        from seal_hub.evaluation.publish import publish_evaluation

        for line in publish_evaluation(result.out, args.publish):
            print(line)
    print(f"eval {suite.name}: avg {result.scores.average:.2f} on {result.scores.num_tasks} tasks")
    return 0


def _describe_snapshot(snapshot) -> list[str]:
    """An interface snapshot as readable lines: identity, components, rho, cause."""
    s, on = snapshot, {True: "on", False: "off"}
    cues, feedback, guides = s.schema_cues, s.recovery_feedback, s.capability_guidelines
    names = ("mark_required", "enum_values", "type_hints")
    settings = ", ".join(f"{name} {on[getattr(cues, name)]}" for name in names)
    train_only = "yes" if s.train_only else "no"
    lines = [
        f"interface {s.version}  parent {s.parent or 'none'}  suite {s.suite}  train-only {train_only}",
        f"content hash {s.content_hash}",
        *([f"derived from {s.origin.describe()}, its version {s.origin.version}"] if s.origin else []),
        f"created {s.created_at}",
        f"schema cues: {on[cues.enabled]} ({settings})",
        *([f"  note: {cues.note}"] if cues.note else []),
        f"recovery feedback: {on[feedback.enabled]}, {len(feedback.hints)} hint(s)",
        *(f"  hint [{kind}]: {text}" for kind, text in feedback.hints.items()),
        f"capability guidelines: {on[guides.enabled]}, {len(guides.lines)} line(s)",
        *(f"  guideline [{line.label}]: {line.text}" for line in guides.lines),
        "rho:",
        *(f"  {label:<20} {value:.3f}" for label, value in s.rho.items()),
    ]
    if s.cause is None:
        return [*lines, "cause: none (null interface or made by hand)"]
    profile = s.cause.profile
    lines.append(f"cause: failure profile of {profile.rollouts} rollouts, {profile.turns} labelled turns")
    lines += [
        f"  {label:<20} count {st.count:>5}  prevalence {st.prevalence:.3f}  mean reward {st.mean_reward:.3f}"
        for label, st in profile.labels.items()
    ]
    return [*lines, *(f"  rule: {rule}" for rule in s.cause.rules)]


def _snapshot(path_or_ref: str):
    """A snapshot from a JSON file, or from a published environment version (`ns/name-env@v3`)."""
    from pathlib import Path

    from seal_hub.interface import load_snapshot

    if Path(path_or_ref).exists() or path_or_ref.endswith(".json"):
        return load_snapshot(path_or_ref)
    from seal_hub.hub import load_interface

    return load_interface(path_or_ref)


def _interface_show(args: argparse.Namespace) -> int:
    print("\n".join(_describe_snapshot(_snapshot(args.snapshot))))
    return 0


def _interface_diff(args: argparse.Namespace) -> int:
    from seal_hub.interface import diff

    a, b = _snapshot(args.a), _snapshot(args.b)
    print(f"--- {args.a} ({a.version}, {a.content_hash[:12]})")
    print(f"+++ {args.b} ({b.version}, {b.content_hash[:12]})")
    print("\n".join(diff(a, b)) or "no differences")
    return 0


# ----- seal-hub report (seal_hub.report) -----


def _report(args: argparse.Namespace) -> int:
    from seal_hub.report import build_report, parse_source_argument

    report = build_report([parse_source_argument(a) for a in args.sources], args.out)
    print(f"wrote {report.path}")
    for plot in report.plots:
        print(f"  {plot.name}")
    print(f"report: {len(report.plots)} plots in {args.out}")
    return 0


def _add_report_command(commands) -> None:
    report = commands.add_parser("report", help="report.md and PNG plots from training run and evaluation directories")
    report.add_argument(
        "sources",
        nargs="+",
        metavar="DIR",
        help="a run directory (seal-hub train --output_dir) or an evaluation directory (seal-hub eval --out); "
        "NAME=DIR names it in tables and legends",
    )
    report.add_argument("--out", default="report", help="directory for report.md and the plots (default: report)")
    report.set_defaults(handler=_report)


# ----- end of seal-hub report -----


def _train(argv: Sequence[str]) -> int:
    from seal_hub.scripts.seal import run

    return run(argv, prog="seal-hub train")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="seal-hub", description="SEAL: co-evolving tool-use agents and environments")
    commands = parser.add_subparsers(dest="command", required=True)
    # listed here for --help; `main` hands everything after `train` to the script's own parser
    commands.add_parser(
        "train",
        add_help=False,
        help="train with SEAL (seal_hub.scripts.seal; no --config: the CPU demo); `seal-hub train --help`",
    )

    envs = commands.add_parser("envs", help="executable environments").add_subparsers(
        dest="envs_command", required=True
    )
    verify = envs.add_parser("verify-gt", help="replay the ground truth through the environment and the verifier")
    _task_arguments(verify, default_split="all")
    verify.add_argument("--seed", type=int, default=0, help="seed of the split when --split_file stratified")
    verify.set_defaults(handler=_verify_gt)

    rollout = commands.add_parser("rollout", help="roll a policy out on BFCL tasks and write trajectories")
    rollout.add_argument(
        "--model", default=None, help="'tiny', 'demo' (SmolLM2-135M), a Hub id or a path (default: demo)"
    )
    _task_arguments(rollout, default_split="test")
    rollout.add_argument("--limit", type=int, default=None, help="first N tasks of the split")
    rollout.add_argument("--out", required=True, help="directory for trajectories.parquet")
    _option(rollout, "num_generations", type=int, default=1, help="rollouts per task")
    _option(rollout, "max_live_episodes", "--batch-size", type=int, default=16, help="episodes generated together")
    _option(rollout, "temperature", type=float, default=1.0, help="sampling temperature (0: greedy)")
    _option(rollout, "top_p", type=float, default=1.0, help="nucleus sampling mass")
    _option(rollout, "top_k", type=int, default=0, help="sample among the k likeliest tokens (0: all)")
    _option(rollout, "max_new_tokens", type=int, default=256, help="tokens per model step")
    _option(rollout, "max_context_tokens", type=int, default=8192, help="longest token sequence of one episode")
    _option(rollout, "parser_style", "--parser", choices=PARSER_STYLES, default=None, help=PARSER_HELP)
    _option(rollout, "seed", type=int, default=0, help="sampling seed (and the seed of --split_file stratified)")
    rollout.add_argument("--interface", default=None, help="a published environment version to apply: ns/name-env@v3")
    rollout.add_argument(
        "--adapter",
        default=None,
        help="a published adapter on the policy: ns/name-adapter@iter-3 (--model defaults to its base)",
    )
    rollout.set_defaults(handler=_rollout)

    evaluate = commands.add_parser("eval", help="score a policy on a suite's held-out tasks (the paper's protocol)")
    evaluate.add_argument("--model", required=True, help="'tiny', 'demo', a Hub id, a local path, or 'oracle'")
    evaluate.add_argument("--adapter", default=None, help="a published adapter: ns/name@iter-3, hf://..., local://...")
    evaluate.add_argument("--suite", default="bfcl", help="evaluation suite (bfcl, ...)")
    evaluate.add_argument("--split", default="test", help="train, test or all (bfcl default: the paper's test split)")
    _option(evaluate, "split_file", default=None, help="'paper' (default), 'stratified', or a split JSON file")
    evaluate.add_argument("--limit", type=int, default=None, help="first N tasks of the split")
    evaluate.add_argument("--interface", default="null", help="'null' (the paper's protocol), a snapshot file or ref")
    evaluate.add_argument("--out", default="eval", help="output directory (rerun with the same one to resume)")
    _option(evaluate, "max_new_tokens", type=int, default=512, help="tokens per model step")
    _option(evaluate, "max_context_tokens", type=int, default=8192, help="longest token sequence of one episode")
    _option(evaluate, "max_live_episodes", "--batch-size", type=int, default=16, help="episodes generated together")
    _option(evaluate, "parser_style", "--parser", choices=PARSER_STYLES, default=None, help=PARSER_HELP)
    evaluate.add_argument(
        "--publish",
        default=None,
        metavar="REPO",
        help="push the records as dataset REPO (ns/name, local:// or hf://) and record the result on the "
        "adapter's card (model-index) at a new revision",
    )
    _option(evaluate, "no_progress", action="store_true", help="no progress bar")
    evaluate.set_defaults(handler=_eval)

    diagnose = commands.add_parser("diagnose", help="label every turn of trajectories and print the failure profile")
    diagnose.add_argument("traj_dir", help="a directory of trajectory Parquet files (or one file)")
    diagnose.set_defaults(handler=_diagnose)

    interface = commands.add_parser("interface", help="learning-interface snapshots").add_subparsers(
        dest="interface_command", required=True
    )
    ref_help = "a snapshot JSON file, or a published version: ns/name-env@v3 (local:// or hf:// to choose)"
    show = interface.add_parser("show", help="print a snapshot: version, parent, hash, components, rho, cause")
    show.add_argument("snapshot", metavar="PATH_OR_REF", help=ref_help)
    show.set_defaults(handler=_interface_show)
    compare = interface.add_parser("diff", help="what changed from snapshot A to snapshot B")
    compare.add_argument("a", metavar="A", help=ref_help)
    compare.add_argument("b", metavar="B", help=ref_help)
    compare.set_defaults(handler=_interface_diff)

    from seal_hub.hub.commands import add_hub_commands

    add_hub_commands(commands)
    _add_report_command(commands)

    # `seal-hub space`: the replay Space (self-contained block)
    from seal_hub.replay.commands import add_space_commands

    add_space_commands(commands)

    # `seal-hub estimate`: training memory per GPU of a recipe config (self-contained block)
    from seal_hub.estimate.commands import add_estimate_command

    add_estimate_command(commands)
    return parser


def _task_arguments(parser: argparse.ArgumentParser, default_split: str) -> None:
    parser.add_argument("--suite", choices=["bfcl"], default="bfcl")
    parser.add_argument("--split", choices=["all", "train", "test"], default=default_split)
    _option(
        parser,
        "split_file",
        default=None,
        help="'paper' (the default: the SEAL paper's 400/400 split, shipped), 'stratified' (seeded by --seed), "
        "or a JSON file with 'train' and 'test' task-id lists",
    )
    _option(parser, "no_progress", action="store_true", help="no progress bar")


def _option(parser: argparse.ArgumentParser, name: str, *aliases: str, **kwargs) -> None:
    """`--name`, spelled as the recipe's field of the same meaning (`seal-hub train` flags, YAML keys), with the
    earlier spellings (`--max-new-tokens`, `--batch-size`, `--parser`) still accepted but left out of --help."""
    parser.add_argument(f"--{name}", **kwargs)
    dashed = f"--{name.replace('_', '-')}"
    kept = {k: v for k, v in kwargs.items() if k in ("type", "choices", "action")}
    for alias in dict.fromkeys([*([dashed] if dashed != f"--{name}" else []), *aliases]):
        parser.add_argument(alias, dest=name, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kept)


def main(argv: Sequence[str] | None = None) -> int:
    quiet_library_notices()  # before a command imports peft/transformers (seal_hub.console)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["train"]:  # the training script parses its own flags (TrlParser: YAML --config, field names)
        return _train(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except (ValueError, KeyError, OSError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"seal-hub: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
