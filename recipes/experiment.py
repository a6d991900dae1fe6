"""The paper's experiment as one command: five arms on one budget, evaluated on the held-out split, one table.

    accelerate launch recipes/experiment.py --config recipes/configs/experiment_tiny.yaml
    accelerate launch recipes/experiment.py --config recipes/configs/experiment_cpu.yaml \
        --output_dir /data/exp-cpu --seeds 0,1,2 --max_steps 6
    python recipes/experiment.py --config recipes/configs/experiment_qwen2.5-3b-lora.yaml
    python recipes/experiment.py --config recipes/configs/experiment_qwen2.5-7b-full.yaml   # 4 GPUs, ZeRO-3
    python recipes/experiment.py --config recipes/configs/experiment_smart_home.yaml       # the long runs: curves
    python recipes/experiment.py --config recipes/configs/experiment_bfcl_single.yaml

The arms are the paper's: vanilla GRPO (all three SEAL switches off), full SEAL, and without environment
adaptation / reweighting / the closed loop. Each is `recipes/seal.py` on the experiment's base config plus its
switches (a run directory under `output_dir`); each arm's final weights, and the untrained model, are scored with
`seal_hub.evaluation` on the BFCL test split (and the OOD suites the config lists); `seal_hub.report` draws the
plots and `output_dir/report/experiment.md` puts the paper's Table 1 and ablation beside ours. Relaunching the
same command resumes: trained arms and finished evaluations are skipped, an interrupted arm resumes from its
last checkpoint. The fields of an experiment config: `seal_hub.experiment.ExperimentConfig`.

The experiment is one process (`python`, or `accelerate launch` of one process): each arm trains in its own
`accelerate launch` of the recipe under the config's `accelerate_config` (`single_gpu.yaml`, `zero3.yaml`, ...), so
the memory an arm held (a colocated vLLM engine's above all) is given back before the next one starts; the
evaluations run in this process afterwards, on one device.

A long run (its base config scores a dev split every `eval_every_steps`, as `experiment_smart_home.yaml` does) also
scores each policy on the test split as soon as it is trained, the shared warm-up on the dev split (the curves'
step 0) and, once the SEAL arm is scored, under each interface version it made (a relaunch does what a stopped run
left of these before it trains on), and writes what must outlive the machine to
`records_dir` (`seal_hub.experiment.records`; committed: an arm recorded there is not trained again) with the page
`learning.md` (curves, tables, SEAL - plain paired by task: `seal_hub.experiment.learning_report`).

Flags after --config override it: `--output_dir DIR` (anywhere), `--seeds 0,1,2`, any other experiment field
by name, and any recipe field (`--max_steps 6`, `--learning_rate 1e-4`): it joins the config's `base`, so every
arm gets it. Values read as YAML (`--seeds [0,1]`, `--reweighting false` is refused: switches are per arm).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

from seal_hub.evaluation.results import RESULTS_JSON
from seal_hub.experiment import (
    ARMS_BY_NAME,
    BUDGET_KEYS,
    SEED_KEYS,
    ArmFailed,
    ExperimentConfig,
    ExperimentError,
    eval_arms,
    evaluate_arm,
    launch_arm,
    launched_processes,
    open_manifest,
    train_arms,
    write_report,
)
from seal_hub.experiment.config import WARMUP_DIR
from seal_hub.experiment.learning import (
    arm_record_name,
    arm_recorded,
    effect_done,
    interface_versions,
    record_evaluation,
    record_interface_effect,
    record_training,
    record_warmup,
    results_dir,
)
from seal_hub.experiment.learning_report import write_learning_report
from seal_hub.experiment.records import load_record
from seal_hub.experiment.run import WARMUP_LABEL, Subject
from seal_hub.hub import HubError
from seal_hub.hub.sources import SourceError
from seal_hub.interface import InterfaceError
from seal_hub.scripts import seal


def resolve_model(name: str) -> str:
    """`tiny`: the tiny random policy (built once in seal_hub's cache, as `seal-hub eval --model tiny`)."""
    if name != "tiny":
        return name
    from seal_hub.models import build_tiny_model, cache_root

    path = cache_root() / "tiny-policy"
    if not (path / "config.json").exists():
        build_tiny_model(path)
    return str(path)


def overrides(flags: list[str]) -> dict:
    """`--key value` / `--key=value` pairs, each value read as YAML (a comma list becomes a list)."""
    values, rest = {}, list(flags)
    while rest:
        flag = rest.pop(0)
        if not flag.startswith("--") or flag == "--":
            raise ExperimentError(f"{flag!r}: overrides are --key value pairs (e.g. --max_steps 6)")
        key, has_value, value = flag[2:].partition("=")
        if not has_value:
            if not rest or rest[0].startswith("--"):
                raise ExperimentError(f"--{key}: no value given")
            value = rest.pop(0)
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError:
            parsed = value
        if isinstance(parsed, str) and "," in parsed:
            parsed = [yaml.safe_load(part) for part in parsed.split(",")]
        values[key] = parsed
    return values


def main(config_path: str, flags: Sequence[str] = ()) -> Path:
    config = ExperimentConfig.from_yaml(config_path, overrides(list(flags)))
    if launched_processes() > 1:
        raise ExperimentError(
            f"the experiment runs as one process and starts each arm's own `accelerate launch` (under "
            f"accelerate_config); this one was launched as {launched_processes()} processes. Run "
            "`python recipes/experiment.py --config ... --accelerate_config recipes/accelerate/zero3.yaml` "
            "(or `accelerate launch` with one process)"
        )
    if config.accelerate_config and not Path(config.accelerate_config).is_file():
        raise ExperimentError(f"accelerate_config {config.accelerate_config}: no such file (an accelerate config)")
    parser = seal.make_parser()  # every record of the training script's arguments
    # the budget as the recipe will run it (the arms share the model, which the evaluations below load)
    parsed = parser.parse_dict(config.arm_settings(ARMS_BY_NAME[config.arms[0]], resolve_model=resolve_model))
    defaults = {key: getattr(args, key) for args in parsed for key in BUDGET_KEYS + SEED_KEYS if hasattr(args, key)}
    model_args = parsed[2]
    del parsed
    open_manifest(config, defaults)

    main_suite = config.suites[0]

    def score(subject: Subject) -> None:
        """The subject's test evaluation on the main suite, into its record at once (a later arm's machine may go)."""
        out = results_dir(config, subject.folder, main_suite, "test")
        if not (out / RESULTS_JSON).exists():
            print(f"experiment: evaluating {subject.folder} on {main_suite}")
            evaluate_arm(config, model_args, subject, main_suite, out)
        record_evaluation(config, record_name(subject), "test", out)

    def train(arm, seed, settings):
        parser.parse_dict(settings)  # refused here, with the field, before a launch is spent on it
        fresh_warmup = config.has_warmup and not any(config.warmup_dir(seed).glob("*.safetensors"))
        started = time.monotonic()
        launch_arm(f"{arm.name}-seed-{seed}", settings, config.output_dir, config.accelerate_config)
        record_training(config, arm, seed, time.monotonic() - started)
        if fresh_warmup:  # built by this launch: its hash recorded, or checked against the recorded one
            print(record_warmup(config, seed).line())
        if config.dev_split:  # a long run: each policy is scored as soon as it exists, the page redrawn
            if config.has_warmup:
                score(Subject(WARMUP_LABEL, f"{WARMUP_DIR}/seed-{seed}", None, seed))
            score(Subject(arm.label, f"{arm.name}/seed-{seed}", arm, seed))
            if config.has_warmup:  # the curves' step 0; after SEAL, its interfaces' own effect
                learning_stages(config, model_args, main_suite, seed)
            write_learning_report(config.title, config.records, seed)

    if config.dev_split and config.has_warmup:  # what a stopped run left of those stages comes before more training
        for seed in config.seeds:
            if any(config.warmup_dir(seed).glob("*.safetensors")):
                learning_stages(config, model_args, main_suite, seed)
    train_arms(config, train, resolve_model=resolve_model)
    results = eval_arms(config, lambda subject, suite, out: evaluate_arm(config, model_args, subject, suite, out))
    for result in results:  # the test verdicts join the committed records
        if result.subject.seed is not None and main_suite in result.evals:
            record_evaluation(config, record_name(result.subject), "test", result.evals[main_suite])
    if config.dev_split:  # the curves' step 0 (the warm-up on dev), the interface's own effect, the page
        for seed in config.seeds:
            learning_stages(config, model_args, main_suite, seed)
            print(f"experiment: learning curves in {write_learning_report(config.title, config.records, seed)}")
    table = write_report(config, results)
    print(f"experiment: {len(config.arms)} arms trained and evaluated; table in {table}")
    return table


def learning_stages(config: ExperimentConfig, model_args, suite: str, seed: int) -> None:
    """The seed's warm-up scored on the dev split (the curves' step 0), then, once the SEAL arm is trained here and
    scored, under each interface version that arm made (the interface's own effect on a frozen policy), and SEAL's
    final policy under the last version it trained under (its dev points read the original interface)."""
    warmup = Subject(WARMUP_LABEL, f"{WARMUP_DIR}/seed-{seed}", None, seed)
    out = results_dir(config, warmup.folder, suite, config.dev_split)
    recorded = "dev" in load_record(config.records, f"warmup-seed-{seed}")
    if not (out / RESULTS_JSON).exists() and not recorded:  # (a record made on another machine stands)
        print(f"experiment: scoring the warm-up on the {config.dev_split} split")
        evaluate_arm(config, model_args, warmup, suite, out, split=config.dev_split)
    if (out / RESULTS_JSON).exists():
        record_evaluation(config, f"warmup-seed-{seed}", "dev", out)
    seal = ARMS_BY_NAME["seal"]
    if not (config.interface_effect and "seal" in config.arms and config.run_dir(seal, seed).is_dir()):
        return
    if not arm_recorded(config, seal, seed):  # its versions are read once it is trained and scored
        return
    versions = interface_versions(config, seed)
    for step, snapshot in versions:
        if effect_done(config, seed, snapshot.version):
            continue
        out = results_dir(config, warmup.folder, suite, config.dev_split, snapshot.version)
        if not (out / RESULTS_JSON).exists():
            print(f"experiment: the warm-up on {config.dev_split} under SEAL's interface {snapshot.version}")
            evaluate_arm(config, model_args, warmup, suite, out, split=config.dev_split, interface=snapshot)
        record_interface_effect(config, seed, step, snapshot.version, out)
    step, last = versions[-1] if versions else (0, None)
    if last is not None and not effect_done(config, seed, last.version, "trained"):
        trained = Subject(seal.label, f"{seal.name}/seed-{seed}", seal, seed)  # its final policy, on its last version
        out = results_dir(config, trained.folder, suite, config.dev_split, last.version)
        if not (out / RESULTS_JSON).exists():
            print(f"experiment: SEAL's policy on {config.dev_split} under its last interface {last.version}")
            evaluate_arm(config, model_args, trained, suite, out, split=config.dev_split, interface=last)
        record_interface_effect(config, seed, step, last.version, out, policy="trained")


def record_name(subject: Subject) -> str:
    return f"warmup-seed-{subject.seed}" if subject.arm is None else arm_record_name(subject.arm, subject.seed)


if __name__ == "__main__":
    cli = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cli.add_argument("--config", required=True, help="an experiment config (recipes/configs/experiment_*.yaml)")
    args, flags = cli.parse_known_args()  # the rest are --key value overrides (see above)
    try:
        main(args.config, flags)
    except (ValueError, HubError, SourceError, InterfaceError, ArmFailed) as exc:  # ExperimentError included
        print(f"experiment.py: error: {exc}", file=sys.stderr)
        sys.exit(2)
