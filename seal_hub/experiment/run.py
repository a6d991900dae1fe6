"""Training every arm of every seed (each in its own launch) and evaluating every setting (in this process),
resumably: the base model once, each seed's shared warm-up, each arm's final weights (`subjects`).

Not covered: what an arm is (`seal_hub.experiment.config`), the training loop (the recipe's `main`, passed in).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seal_hub.experiment.config import (
    ARMS_BY_NAME,
    WARMUP_DIR,
    Arm,
    ExperimentConfig,
    arm_trained,
    mark_trained,
    seed_folder,
)
from seal_hub.experiment.learning import arm_recorded, results_dir


def free_memory() -> None:
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


@dataclass(frozen=True)
class Subject:
    """What one evaluation scores: the untrained model, a seed's SFT warm-up, or an arm's run of one seed."""

    label: str  # its row in the tables: "base", "SFT warm-up", or the arm's label
    folder: str  # under the experiment's output_dir ("base", "warmup/seed-K", "ARM/seed-K")
    arm: Arm | None = None
    seed: int | None = None  # None: the untrained model (greedy evaluation: nothing to seed)

    @property
    def trained(self) -> bool:
        """The folder holds weights to score (adapter or full model): every subject but the untrained model,
        which alone has no seed."""
        return self.seed is not None

    @property
    def name(self) -> str:
        return self.folder.replace("/", "-")


BASE = Subject("base", "base")
WARMUP_LABEL = "SFT warm-up"


def subjects(config: ExperimentConfig) -> list[Subject]:
    """Everything the experiment evaluates, seed by seed: the base model (once), each seed's warm-up (when the
    arms share one), each arm."""
    chosen = [BASE] if config.evaluate_base else []
    for seed in config.seeds:
        if config.has_warmup:
            chosen.append(Subject(WARMUP_LABEL, f"{WARMUP_DIR}/{seed_folder(seed)}", None, seed))
        for name in config.arms:
            arm = ARMS_BY_NAME[name]
            chosen.append(Subject(arm.label, f"{arm.name}/{seed_folder(seed)}", arm, seed))
    return chosen


@dataclass(frozen=True)
class ArmResult:
    subject: Subject
    evals: dict[str, Path]  # suite -> evaluation directory

    @property
    def label(self) -> str:
        return self.subject.label

    @property
    def arm(self) -> Arm | None:
        return self.subject.arm


def train_arms(
    config: ExperimentConfig,
    train: Callable[[Arm, int, dict[str, Any]], None],
    log: Callable[[str], None] = print,
    resolve_model: Callable[[str], str] = str,
) -> list[tuple[Arm, int]]:
    """Train every arm of every seed not yet trained, seed by seed (so a partial experiment has whole seeds):
    `train(arm, seed, settings)` runs one (`launch.launch_arm` in the recipe: its own `accelerate launch`), and
    the arm is marked trained when it returns. Returns the (arm, seed) runs that trained now."""
    trained, todo = [], []
    for seed in config.seeds:
        for name in config.arms:
            arm = ARMS_BY_NAME[name]
            if arm_trained(config, arm, seed) or arm_recorded(config, arm, seed):
                log(f"experiment: arm {arm.name} seed {seed} ({arm.label}) already trained: skipped")
            else:
                todo.append((arm, seed))
    started = time.monotonic()
    for done, (arm, seed) in enumerate(todo):
        eta = ""
        if done:  # the arms share a budget: the ones trained so far time the rest
            left = (time.monotonic() - started) / done * (len(todo) - done)
            eta = f"; about {format_duration(left)} of training left"
        log(f"experiment: training arm {arm.name} seed {seed} ({arm.label}), {done + 1} of {len(todo)}{eta}")
        train(arm, seed, config.arm_settings(arm, seed, resolve_model))
        free_memory()
        mark_trained(config, arm, seed)
        trained.append((arm, seed))
    return trained


def format_duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def eval_arms(
    config: ExperimentConfig,
    evaluate: Callable[[Subject, str, Path], None],
    log: Callable[[str], None] = print,
) -> list[ArmResult]:
    """Evaluate every subject (`subjects`) on each suite; finished evaluations are kept."""
    from seal_hub.evaluation.results import RESULTS_JSON

    results = []
    for subject in subjects(config):
        evals = {}
        elsewhere = subject.arm is not None and not (Path(config.output_dir) / subject.folder).is_dir()
        if elsewhere and arm_recorded(config, subject.arm, subject.seed):
            log(
                f"experiment: {subject.folder} was trained and scored elsewhere: its record in {config.records} stands"
            )
            continue
        for suite in config.suites:
            out = results_dir(config, subject.folder, suite, "test")
            if not (out / RESULTS_JSON).exists():
                log(f"experiment: evaluating {subject.folder} on {suite}")
                try:
                    evaluate(subject, suite, out)
                except SuiteUnavailable as exc:  # an OOD suite whose extra is missing: noted, not fatal
                    log(f"experiment: {suite} skipped ({exc})")
                    continue
                free_memory()
            evals[suite] = out
        results.append(ArmResult(subject, evals))
    return results


class SuiteUnavailable(RuntimeError):
    """An optional evaluation suite cannot load here (a missing extra)."""


def adapter_record(subject: Subject, run_dir: Path) -> dict[str, Any]:
    """A run's final weights as an evaluation's adapter record: its run directory and a digest of the files."""
    from seal_hub.experiment.records import weights_sha256

    return {"ref": subject.name, "repo": subject.folder, "revision": "final", "commit": weights_sha256(run_dir)[:40]}


def suite_for(config: ExperimentConfig, name: str):
    """The suite `name` names: the base config's own environment (its class path), else a built-in suite."""
    from seal_hub.envs.builtin import load_suite

    settings = config.common_settings()
    if name != settings.get("environment"):
        return load_suite(name)
    from seal_hub.training.selection import TaskArguments

    keys = ("environment", "dataset", "dataset_revision", "reward_funcs", "eval_fraction", "call_timeout_s")
    return TaskArguments(**{key: settings[key] for key in keys if key in settings}).resolve_suite()


def evaluate_arm(
    config: ExperimentConfig,
    model_args: Any,
    subject: Subject,
    suite_name: str,
    out: Path,
    split: str = "test",
    interface: Any = None,
) -> None:
    """Score the subject's weights (or the untrained model) on `suite_name`'s `split` (test: its default, bfcl's
    the paper's; the main suite's `eval_categories` taken in turn, `eval_limit` of them; the dev split: the arms'
    `dev_tasks`), with `seal-hub eval`'s protocol, through the one evaluation path (`evaluate_policy`), on the null
    interface unless `interface` (an `InterfaceSnapshot`) is given."""
    from transformers.integrations.deepspeed import unset_hf_deepspeed_config

    from seal_hub.envs.suite import SuiteError, in_turn
    from seal_hub.evaluation import EvalProtocol, EvalSpec, evaluate_policy, interface_record
    from seal_hub.generation import build_hf_backend
    from seal_hub.hub.loading import load_policy_version
    from seal_hub.hub.policy import read_policy
    from seal_hub.interface import InterfaceSnapshot
    from seal_hub.models import load_policy, place_for_inference
    from seal_hub.rollout import PolicyInfo

    main = suite_name == config.suites[0]
    try:
        suite = suite_for(config, suite_name)
    except SuiteError as exc:
        if main:  # the suite the arms are compared on must load; an OOD one may miss its extra
            raise
        raise SuiteUnavailable(str(exc)) from None
    categories = config.eval_categories if main else None
    limit = config.eval_limit if split == "test" else config.dev_tasks
    settings = config.common_settings()  # the split the arms trained on: its test (or dev) tasks
    if main:
        ids = suite.split_ids(split, settings.get("split_file"), settings.get("split_seed", 0))
    else:
        ids = suite.split_ids(split)
    tasks = in_turn(suite.select(ids), limit, categories)
    unset_hf_deepspeed_config()  # training's ZeRO-3 must not partition a model loaded for one process alone
    run_dir = Path(config.output_dir) / subject.folder if subject.trained else None
    if run_dir is None:
        model, tokenizer = load_policy(model_args)
    else:  # what the run wrote says what it is (an adapter on model_args' base, or a whole model): the one loader
        policy = read_policy(run_dir, base=model_args.model_name_or_path)
        model, tokenizer = load_policy_version(policy, base=model_args)
    place_for_inference(model, model_args)
    model.eval()
    protocol = EvalProtocol(
        max_new_tokens=config.eval_max_new_tokens,
        max_context_tokens=config.eval_max_context_tokens,
        max_live_episodes=config.eval_max_live_episodes,
    )
    model_id = model_id_of(config.plan()["model"])
    adapter = adapter_record(subject, run_dir) if run_dir is not None else None
    ref = "null" if interface is None else f"{interface.version}"
    interface = InterfaceSnapshot.null(suite.name) if interface is None else interface
    info = PolicyInfo(f"{model_id}:{subject.name}" if adapter else model_id, adapter["commit"] if adapter else None)
    spec = EvalSpec(
        suite=suite.name,
        split=split,
        split_source=suite.default_split,
        model={"id": model_id, "revision": None},
        adapter=adapter,
        interface=interface_record(interface, ref),
    )
    # results.json names the parser style the chat template teaches (evaluate_policy resolves it)
    evaluate_policy(build_hf_backend(model, tokenizer), tokenizer, info, suite, tasks, protocol, interface, spec, out)


def model_id_of(name: str) -> str:
    """The model's id in results and tables: the Hub id, or the folder name of a local model."""
    path = Path(name)
    return path.name if path.is_absolute() or path.exists() else name
