"""An experiment's configuration, its arms, and the manifest that pins its plan in the output directory.

Each arm is the base config plus its ablation switches only (`ARMS`), so the budget is identical by
construction; each arm runs once per seed (`seeds`, the recipe's `seed`: sampling, shuffling and LoRA's
initialisation), into `output_dir/ARM/seed-K`. When the base config has an SFT warm-up, every arm of a seed
starts from the same one (`output_dir/warmup/seed-K`, trained by the first arm that needs it, loaded by the
others: the recipe's `sft_warmup_dir`), so the arms differ only in what their RL phase does. `open_manifest`
records the plan (arms, overrides, budget, seeds, evaluation) and refuses an output directory that holds
another plan. Not covered: running arms (`seal_hub.experiment.run`, each in its own `accelerate launch`:
`seal_hub.experiment.launch`), tables (`seal_hub.experiment.tables`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from seal_hub.atomic import write_json
from seal_hub.defaults import DEFAULT_SUITE, EVAL_MAX_NEW_TOKENS, MAX_CONTEXT_TOKENS, MAX_LIVE_EPISODES

MANIFEST, ARM_FILE, REPORT_DIR, TABLE_FILE = "manifest.json", "arm.json", "report", "experiment.md"
SCHEMA = "seal_hub.experiment/1"
SWITCHES = ("env_adaptation", "reweighting", "closed_loop")
BUDGET_KEYS = (
    "max_steps",
    "num_train_epochs",
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "num_generations",
    "num_train_tasks",
    "learning_rate",
    "max_steps_per_episode",
    "max_completion_length",
    "sft_warmup_steps",
    "sft_learning_rate",
    "sft_batch_size",
)
SEED_KEYS = ("split_file", "split_seed")
PER_RUN = (*SWITCHES, "output_dir", "seed", "sft_warmup_dir", "held_out_comparison")  # set by the experiment
WARMUP_DIR = "warmup"
RECORDS_DIR = "records"


class ExperimentError(ValueError):
    """A configuration or output directory to fix; the message says what and how."""


@dataclass(frozen=True)
class Arm:
    name: str  # run directory under the experiment's output_dir
    label: str  # the paper's name for it (its ablation table, `seal_hub.report.naming.variant`)
    switches: dict[str, bool]


ARMS = (
    Arm("vanilla", "vanilla RL", dict.fromkeys(SWITCHES, False)),
    Arm("seal", "SEAL", dict.fromkeys(SWITCHES, True)),
    Arm("no_env_adaptation", "w/o env adaptation", {**dict.fromkeys(SWITCHES, True), "env_adaptation": False}),
    Arm("no_reweighting", "w/o reweighting", {**dict.fromkeys(SWITCHES, True), "reweighting": False}),
    Arm("no_closed_loop", "w/o closed loop", {**dict.fromkeys(SWITCHES, True), "closed_loop": False}),
)
ARMS_BY_NAME = {arm.name: arm for arm in ARMS}


def seed_folder(seed: int) -> str:
    return f"seed-{seed}"


@dataclass(frozen=True)
class ExperimentConfig:
    base_config: str = field(
        metadata={"help": "The per-run recipe config every arm starts from (relative: to this file)."}
    )
    output_dir: str = field(metadata={"help": "One run directory per arm, the manifest and the report go here."})
    name: str | None = field(
        default=None,
        metadata={"help": "The experiment's name in its report's lines (e.g. smart_home); unset: output_dir's name."},
    )
    base: dict[str, Any] = field(default_factory=dict, metadata={"help": "Overrides of base_config for every arm."})
    arms: tuple[str, ...] = field(
        default=tuple(a.name for a in ARMS), metadata={"help": f"Arms to run, of {', '.join(ARMS_BY_NAME)}."}
    )
    seeds: tuple[int, ...] = field(
        default=(0,), metadata={"help": "Each arm runs once per seed; the tables give the mean and a 95% interval."}
    )
    evaluate_base: bool = field(default=True, metadata={"help": "Also evaluate the untrained model (Table 1's base)."})
    eval_suites: tuple[str, ...] | None = field(
        default=None,
        metadata={
            "help": "Suites to evaluate on, test split: the main one first (bfcl: the paper's split and tables), "
            "then OOD suites. Unset: the base config's own (its environment, else its suite, else bfcl)."
        },
    )
    eval_limit: int | None = field(
        default=None, metadata={"help": "N tasks of each suite, the categories taken in turn (all if unset)."}
    )
    eval_categories: tuple[str, ...] | None = field(
        default=None, metadata={"help": "Categories of the main suite to evaluate on (all if unset)."}
    )
    eval_max_new_tokens: int = field(
        default=EVAL_MAX_NEW_TOKENS, metadata={"help": "Tokens per model step at evaluation."}
    )
    eval_max_context_tokens: int = field(
        default=MAX_CONTEXT_TOKENS, metadata={"help": "Longest evaluated episode, in tokens."}
    )
    eval_max_live_episodes: int = field(
        default=MAX_LIVE_EPISODES, metadata={"help": "Episodes generated together at evaluation."}
    )
    records_dir: str | None = field(
        default=None,
        metadata={
            "help": "Small files meant to be committed (seal_hub.experiment.records): each arm's steps and dev curve, "
            "its test verdicts, the warm-up's weight hash. An arm recorded there is not trained again, so arms run on "
            "different machines pair. Unset: output_dir/records."
        },
    )
    interface_effect: bool = field(
        default=True,
        metadata={
            "help": "With a dev split: score the frozen warm-up on it under each interface version the SEAL arm "
            "made (at its dev evaluations): what the evolved interface alone does for a fixed policy."
        },
    )
    accelerate_config: str | None = field(
        default=None,
        metadata={
            "help": "The `accelerate launch --config_file` each arm's training runs under (relative: to this file; "
            "on the command line: to the working directory); unset: accelerate's default configuration. How the "
            "arms run, not what they compute: not part of the manifest's plan."
        },
    )

    def __post_init__(self) -> None:
        unknown = [a for a in self.arms if a not in ARMS_BY_NAME]
        if unknown or not self.arms:
            raise ExperimentError(f"arms: unknown {unknown or 'empty list'}; choose from {', '.join(ARMS_BY_NAME)}")
        if len(set(self.arms)) != len(self.arms):
            raise ExperimentError(f"arms: {list(self.arms)} names an arm twice; list each once")
        fixed = sorted(set(self.base) & set(PER_RUN))
        if fixed:
            raise ExperimentError(
                f"base: {fixed} are set per run by the experiment (seeds: the seeds field); remove them from base"
            )
        if not self.seeds or len(set(self.seeds)) != len(self.seeds) or not all(type(s) is int for s in self.seeds):
            raise ExperimentError(f"seeds: {list(self.seeds)}; give one or more distinct integer seeds")
        if self.eval_suites is not None and (
            not self.eval_suites or len(set(self.eval_suites)) != len(self.eval_suites)
        ):
            raise ExperimentError(f"eval_suites: {list(self.eval_suites)}; name one or more suites, each once")
        if self.eval_limit is not None and self.eval_limit < 1:
            raise ExperimentError(f"eval_limit must be >= 1 or unset, got {self.eval_limit}")

    @classmethod
    def from_yaml(cls, path: str | Path, overrides: dict[str, Any] | None = None) -> ExperimentConfig:
        """The config in `path`; `overrides` (the command line's) set its fields by name, any other key joins
        `base` (a recipe field for every arm)."""
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise ExperimentError(f"{path}: cannot read the experiment config ({exc})") from None
        if not isinstance(data, dict):
            raise ExperimentError(f"{path}: an experiment config is a mapping of its fields")
        known = {name for name in cls.__dataclass_fields__}
        for key, value in (overrides or {}).items():
            if key in known:
                data[key] = value
            else:
                data["base"] = {**(data.get("base") or {}), key: value}
        extra = sorted(set(data) - known)
        if extra:
            raise ExperimentError(f"{path}: unknown key(s) {extra}; the fields are {sorted(known)}")
        base_config = Path(data.get("base_config", ""))
        data["base_config"] = str(base_config if base_config.is_absolute() else path.parent / base_config)
        if data.get("accelerate_config"):  # a file named in the YAML is beside it; one on the command line, here
            launch = Path(data["accelerate_config"])
            beside = "accelerate_config" not in (overrides or {})
            data["accelerate_config"] = str(launch if launch.is_absolute() or not beside else path.parent / launch)
        for key in ("arms", "eval_suites", "seeds", "eval_categories"):
            if data.get(key) is not None:
                data[key] = tuple(data[key]) if isinstance(data[key], list | tuple) else (data[key],)
        try:
            return cls(**data)
        except TypeError as exc:
            raise ExperimentError(f"{path}: {exc}") from None

    @property
    def suites(self) -> tuple[str, ...]:
        """The suites evaluated, the main one first: `eval_suites`, else the base config's own."""
        if self.eval_suites is not None:
            return self.eval_suites
        settings = self.common_settings()
        return (settings.get("environment") or settings.get("suite") or DEFAULT_SUITE,)

    @property
    def title(self) -> str:
        return self.name or Path(self.output_dir).name

    @property
    def records(self) -> Path:
        return Path(self.records_dir) if self.records_dir else Path(self.output_dir) / RECORDS_DIR

    @property
    def dev_split(self) -> str | None:
        """The split the arms' learning curves read (the base's `eval_split` scored every `eval_every_steps`),
        or None: the arms score no split of their own during training."""
        settings = self.common_settings()
        split = settings.get("eval_split", "test")
        return split if settings.get("eval_every_steps") and split != "test" else None

    @property
    def dev_tasks(self) -> int | None:
        """Tasks of each dev evaluation (the base's `eval_tasks`)."""
        return self.common_settings().get("eval_tasks")

    def run_dir(self, arm: Arm, seed: int) -> Path:
        return Path(self.output_dir) / arm.name / seed_folder(seed)

    def warmup_dir(self, seed: int) -> Path:
        return Path(self.output_dir) / WARMUP_DIR / seed_folder(seed)

    def common_settings(self) -> dict[str, Any]:
        """The base config with the common overrides: what every run shares."""
        try:
            settings = yaml.safe_load(Path(self.base_config).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise ExperimentError(f"base_config {self.base_config}: cannot read it ({exc})") from None
        return {**settings, **self.base}

    @property
    def has_warmup(self) -> bool:
        return bool(self.common_settings().get("sft_warmup_steps"))

    def arm_settings(self, arm: Arm, seed: int | None = None, resolve_model: Callable[[str], str] = str) -> dict:
        """The recipe's settings of `arm` with `seed` (the first of `seeds` by default): base config, the common
        overrides, the arm's switches, then what the experiment sets per run (`PER_RUN`)."""
        seed = self.seeds[0] if seed is None else seed
        settings = {**self.common_settings(), **arm.switches, "seed": seed, "held_out_comparison": False}
        settings["output_dir"] = str(self.run_dir(arm, seed))
        if settings.get("sft_warmup_steps"):
            settings["sft_warmup_dir"] = str(self.warmup_dir(seed))
        settings["model_name_or_path"] = resolve_model(settings["model_name_or_path"])
        return settings

    def plan(self, defaults: dict[str, Any] | None = None) -> dict[str, Any]:
        """What decides the results: the manifest's content, compared on a rerun. `defaults`: the recipe's
        values of the budget and seed keys the YAML files leave unset (they are recorded too)."""
        arms = [ARMS_BY_NAME[name] for name in self.arms]
        first = {**(defaults or {}), **self.arm_settings(arms[0])}
        budget = {key: first[key] for key in BUDGET_KEYS if key in first}
        seeds = {key: first[key] for key in SEED_KEYS if key in first}
        return {
            "schema": SCHEMA,
            "base_config": Path(self.base_config).name,
            "base_overrides": self.base,
            "model": first["model_name_or_path"],
            "budget": budget,
            "seeds": {"seeds": list(self.seeds), **seeds},
            "shared_warmup": self.has_warmup,
            "arms": [{"name": a.name, "label": a.label, "overrides": a.switches} for a in arms],
            "evaluation": {
                "suites": list(self.suites),
                "split": "test",
                "limit": self.eval_limit,
                "categories": list(self.eval_categories) if self.eval_categories else None,
                "max_new_tokens": self.eval_max_new_tokens,
                "max_context_tokens": self.eval_max_context_tokens,
                "base_model": self.evaluate_base,
            },
        }


def open_manifest(config: ExperimentConfig, defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write the manifest, or check that an existing one holds the same plan (else mixing runs is refused)."""
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    plan = config.plan(defaults)
    path = out / MANIFEST
    if path.exists():
        old = json.loads(path.read_text(encoding="utf-8"))
        old_plan = {k: v for k, v in old.items() if k != "digest"}
        if old_plan != json.loads(json.dumps(plan)):
            differ = sorted(k for k in plan if old_plan.get(k) != json.loads(json.dumps(plan[k])))
            raise ExperimentError(
                f"{path}: holds another experiment ({', '.join(differ)} differ); use a new output_dir or delete it"
            )
        return old
    manifest = {**plan, "digest": hashlib.sha256(json.dumps(plan, sort_keys=True).encode()).hexdigest()[:16]}
    write_json(path, manifest)
    return manifest


def arm_trained(config: ExperimentConfig, arm: Arm, seed: int) -> bool:
    path = config.run_dir(arm, seed) / ARM_FILE
    return path.exists() and json.loads(path.read_text(encoding="utf-8")).get("trained") is True


def mark_trained(config: ExperimentConfig, arm: Arm, seed: int) -> None:
    record = {"arm": arm.name, "label": arm.label, "seed": seed, "trained": True}
    write_json(config.run_dir(arm, seed) / ARM_FILE, record)
