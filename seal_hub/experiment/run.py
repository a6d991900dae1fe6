"""Training every arm (all processes) and evaluating every arm's final weights (main process), resumably.

Not covered: what an arm is (`seal_hub.experiment.config`), the training loop (the recipe's `main`, passed in).
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from seal_hub.experiment.config import ARMS_BY_NAME, Arm, ExperimentConfig, arm_trained, mark_trained


def free_memory() -> None:
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


@dataclass(frozen=True)
class ArmResult:
    arm: Arm | None  # None: the untrained base model
    evals: dict[str, Path]  # suite -> evaluation directory

    @property
    def label(self) -> str:
        return self.arm.label if self.arm is not None else "base"


def train_arms(
    config: ExperimentConfig,
    parse: Callable[[dict[str, Any]], Sequence[Any]],
    train: Callable[..., None],
    is_main: bool = True,
    barrier: Callable[[], None] = lambda: None,
    log: Callable[[str], None] = print,
) -> list[Arm]:
    """Train every arm not yet trained (all processes take part); returns the arms that trained now."""
    trained = []
    for name in config.arms:
        arm = ARMS_BY_NAME[name]
        barrier()
        if arm_trained(config, arm):
            log(f"experiment: arm {arm.name} ({arm.label}) already trained: skipped")
            continue
        log(f"experiment: training arm {arm.name} ({arm.label})")
        train(*parse(config.arm_settings(arm)))
        free_memory()
        barrier()
        if is_main:
            mark_trained(config, arm)
        trained.append(arm)
    return trained


def eval_arms(
    config: ExperimentConfig,
    evaluate: Callable[[Arm | None, str, Path], None],
    log: Callable[[str], None] = print,
) -> list[ArmResult]:
    """Evaluate the base model (if asked) and every trained arm on each suite; finished evaluations are kept."""
    from seal_hub.evaluation.results import RESULTS_JSON

    subjects: list[Arm | None] = ([None] if config.evaluate_base else []) + [ARMS_BY_NAME[a] for a in config.arms]
    results = []
    for arm in subjects:
        folder = Path(config.output_dir) / (arm.name if arm is not None else "base")
        evals = {}
        for suite in config.eval_suites:
            out = folder / "eval" / suite
            if not (out / RESULTS_JSON).exists():
                log(f"experiment: evaluating {arm.name if arm else 'base'} on {suite}")
                try:
                    evaluate(arm, suite, out)
                except SuiteUnavailable as exc:  # an OOD suite whose extra is missing: noted, not fatal
                    log(f"experiment: {suite} skipped ({exc})")
                    continue
                free_memory()
            evals[suite] = out
        results.append(ArmResult(arm, evals))
    return results


class SuiteUnavailable(RuntimeError):
    """An optional evaluation suite cannot load here (a missing extra)."""


def adapter_record(arm: Arm, run_dir: Path) -> dict[str, Any]:
    """An arm's final weights as an evaluation's adapter record: its run directory and a digest of the files."""
    digest = hashlib.sha256()
    for path in sorted(run_dir.glob("*.safetensors")):
        digest.update(path.name.encode())
        with path.open("rb") as weights:  # streamed: a full fine-tune's shards are many GB
            while chunk := weights.read(1 << 24):
                digest.update(chunk)
    return {"ref": arm.name, "repo": run_dir.name, "revision": "final", "commit": digest.hexdigest()[:40]}


def evaluate_arm(config: ExperimentConfig, model_args: Any, arm: Arm | None, suite_name: str, out: Path) -> None:
    """Score the arm's final weights (or the untrained model) on `suite_name` under the paper's protocol."""
    from transformers.integrations.deepspeed import unset_hf_deepspeed_config

    from seal_hub.envs.suite import SuiteError, load_suite
    from seal_hub.evaluation import EvalProtocol, EvalSpec, ModelRunner, interface_record, run_evaluation
    from seal_hub.interface import InterfaceSnapshot
    from seal_hub.models import end_token_ids, load_policy, place_for_inference
    from seal_hub.models.parser_style import resolve_parser_style
    from seal_hub.rollout import HFBackend, PolicyInfo, RolloutEngine

    try:
        suite = load_suite(suite_name)
    except SuiteError as exc:
        if suite_name == "bfcl":
            raise
        raise SuiteUnavailable(str(exc)) from None
    split_file = "paper" if suite_name == "bfcl" else None
    tasks = suite.select(suite.split_ids("test", split_file))[: config.eval_limit]
    unset_hf_deepspeed_config()  # training's ZeRO-3 must not partition a model loaded for one process alone
    run_dir = Path(config.output_dir) / arm.name if arm is not None else None
    if run_dir is not None and not model_args.use_peft:  # a full fine-tune saved its whole model there
        model, tokenizer = load_policy(replace(model_args, model_name_or_path=str(run_dir)))
    else:
        model, tokenizer = load_policy(model_args)
        if run_dir is not None:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, str(run_dir))
    place_for_inference(model, model_args)
    model.eval()
    protocol = EvalProtocol(
        max_new_tokens=config.eval_max_new_tokens,
        max_context_tokens=config.eval_max_context_tokens,
        max_live_episodes=config.eval_max_live_episodes,
        parser_style=resolve_parser_style(tokenizer, None),  # results.json names the style the template teaches
    )
    model_id = model_id_of(config.plan()["model"])
    adapter = adapter_record(arm, run_dir) if run_dir is not None else None
    interface = InterfaceSnapshot.null(suite.name)
    backend = HFBackend(model, end_token_ids(model, tokenizer), tokenizer.pad_token_id or 0, seed=0)
    info = PolicyInfo(f"{model_id}:{arm.name}" if arm else model_id, adapter["commit"] if adapter else None)
    engine = RolloutEngine(backend, tokenizer, suite, protocol.rollout_config(), info, interface)
    spec = EvalSpec(
        suite=suite.name,
        split="test",
        split_source=split_file or "default",
        model={"id": model_id, "revision": None},
        adapter=adapter,
        interface=interface_record(interface, "null"),
        protocol=protocol.as_dict(),
    )
    run_evaluation(suite, tasks, ModelRunner(engine), spec, out, progress=False)


def model_id_of(name: str) -> str:
    """The model's id in results and tables: the Hub id, or the folder name of a local model."""
    path = Path(name)
    return path.name if path.is_absolute() or path.exists() else name
