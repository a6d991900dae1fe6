"""The paper's experiment as one command: five arms on one budget, evaluated on the held-out split, one table.

    accelerate launch recipes/experiment.py --config recipes/configs/experiment_tiny.yaml
    accelerate launch recipes/experiment.py --config recipes/configs/experiment_cpu.yaml \
        --output_dir /data/exp-cpu --seeds 0,1,2 --max_steps 6
    python recipes/experiment.py --config recipes/configs/experiment_qwen2.5-3b-lora.yaml
    python recipes/experiment.py --config recipes/configs/experiment_qwen2.5-7b-full.yaml   # 4 GPUs, ZeRO-3

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

Flags after --config override it: `--output_dir DIR` (anywhere), `--seeds 0,1,2`, any other experiment field
by name, and any recipe field (`--max_steps 6`, `--learning_rate 1e-4`): it joins the config's `base`, so every
arm gets it. Values read as YAML (`--seeds [0,1]`, `--reweighting false` is refused: switches are per arm).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

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

    def train(arm, seed, settings):
        parser.parse_dict(settings)  # refused here, with the field, before a launch is spent on it
        launch_arm(f"{arm.name}-seed-{seed}", settings, config.output_dir, config.accelerate_config)

    train_arms(config, train, resolve_model=resolve_model)
    results = eval_arms(config, lambda subject, suite, out: evaluate_arm(config, model_args, subject, suite, out))
    table = write_report(config, results)
    print(f"experiment: {len(config.arms)} arms trained and evaluated; table in {table}")
    return table


if __name__ == "__main__":
    cli = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cli.add_argument("--config", required=True, help="an experiment config (recipes/configs/experiment_*.yaml)")
    cli.add_argument("overrides", nargs=argparse.REMAINDER, help="--key value pairs (see above)")
    args = cli.parse_args()
    try:
        main(args.config, args.overrides)
    except (ValueError, HubError, SourceError, InterfaceError, ArmFailed) as exc:  # ExperimentError included
        print(f"experiment.py: error: {exc}", file=sys.stderr)
        sys.exit(2)
