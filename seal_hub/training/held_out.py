"""Held-out evaluation during training: a fixed subset of the test split, scored with the paper's protocol
(`seal_hub.evaluation.EvalProtocol`: null interface, greedy decoding, withheld tools executed and BFCL's step
limit, as `seal-hub eval` scores), counted per category.

`held_out_protocol(config)` is the one protocol a training run evaluates under, built from its `SealConfig`: the
periodic evaluation here and the held-out comparison (`seal_hub.training.comparison`: base model, after the
warm-up, after SEAL) both use it, so every point of the learning curve is scored the same way. It takes the
evaluation's tokens per step (`eval_max_new_tokens`), the context, batch size and parser style from the config,
and the step limit from the protocol, not from training: BFCL's 20 calling steps per turn, which `seal-hub eval`
applies and the paper evaluates with, whatever `max_steps_per_turn` the rollouts trained under.

`held_out_tasks` picks the subset (`eval_tasks` of them): categories interleaved in the split's order (BFCL: base,
miss_func, miss_param, long_context, base, ...), so a small count still covers every category.
`HeldOutEvaluation` is the trainer's callback that runs it every `eval_every_steps` optimizer steps, on every rank
(generation under ZeRO-3 needs all of them), through the one evaluation path (`seal_hub.evaluation.evaluate_policy`)
in memory; the result is logged as `eval_success_rate` and `eval_success_rate/<category>` (trackio and wandb show
them as `eval/...`) and written to `held_out/step_NNNNNN.json` in the run directory
(`seal_hub.training.run_records.held_out_path`), where `seal-hub report` and the comparison find it.

Not covered: the full 400-task evaluation with its own records and cards (`seal-hub eval`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformers import Trainer, TrainerCallback

from seal_hub.atomic import write_json
from seal_hub.envs.suite import Suite, SuiteTask, in_turn
from seal_hub.evaluation.harness import evaluate_policy
from seal_hub.evaluation.protocol import EvalProtocol
from seal_hub.generation import GenerationBackend
from seal_hub.interface import InterfaceSnapshot
from seal_hub.rollout import PolicyInfo
from seal_hub.training.run_records import held_out_path

if TYPE_CHECKING:
    from seal_hub.training.config import SealConfig
    from seal_hub.training.trainer import SealTrainer


def held_out_protocol(config: SealConfig) -> EvalProtocol:
    """The protocol a training run's held-out evaluations score under (see the module docstring): tokens per step
    are `eval_max_new_tokens` (`seal-hub eval`'s default), not the training reply budget, and the step limit is the
    protocol's (BFCL's 20 per turn), not training's `max_steps_per_turn`."""
    return EvalProtocol(
        max_new_tokens=config.eval_max_new_tokens,
        max_context_tokens=config.max_context_tokens,
        parser_style=config.parser_style,
        max_live_episodes=config.max_live_episodes,
    )


@dataclass(frozen=True)
class HeldOutResult:
    step: int
    per_category: dict[str, tuple[int, int]]  # category -> (passed, total)
    seconds: float
    task_ids: tuple[str, ...] = field(default=())
    protocol: EvalProtocol | None = None

    @property
    def num_tasks(self) -> int:
        return sum(total for _, total in self.per_category.values())

    @property
    def success_rate(self) -> float:
        return sum(passed for passed, _ in self.per_category.values()) / max(1, self.num_tasks)

    def log_metrics(self) -> dict[str, float]:
        """Trainer-log keys: the `eval_` prefix is what TRL and the reporting integrations turn into `eval/`."""
        metrics = {"eval_success_rate": self.success_rate, "eval_num_tasks": float(self.num_tasks)}
        metrics |= {f"eval_success_rate/{c}": p / max(1, t) for c, (p, t) in self.per_category.items()}
        return metrics

    def to_json(self) -> dict[str, Any]:
        protocol = self.protocol.as_dict() if self.protocol is not None else {}
        return {
            "step": self.step,
            "num_tasks": self.num_tasks,
            "success_rate": self.success_rate,
            "per_category": {c: {"passed": p, "total": t} for c, (p, t) in self.per_category.items()},
            "seconds": self.seconds,
            "task_ids": list(self.task_ids),
            "protocol": {"interface": "v0 (null)", **protocol},
        }


def held_out_tasks(
    suite: Suite, test_ids: Sequence[str], eval_tasks: int, categories: Sequence[str] | None = None
) -> list[SuiteTask]:
    """The first `eval_tasks` tasks of the test split (of `categories` when given), taking the categories in turn:
    the tasks `seal-hub eval --split test --limit EVAL_TASKS [--categories ...]` scores."""
    if eval_tasks < 1:
        raise ValueError(f"eval_tasks must be >= 1, got {eval_tasks}")
    if not test_ids:
        raise ValueError("the split has no test tasks to evaluate on; give a split file with a 'test' list")
    return in_turn(suite.select(list(test_ids)), eval_tasks, categories)


def evaluate_held_out(
    backend: GenerationBackend,
    tokenizer,
    suite: Suite,
    tasks: Sequence[SuiteTask],
    protocol: EvalProtocol,
    policy: PolicyInfo,
    step: int,
) -> HeldOutResult:
    """One greedy rollout per task on the null interface under `protocol` (`held_out_protocol`); verdicts per
    category."""
    interface = InterfaceSnapshot.null(suite.name)
    result = evaluate_policy(backend, tokenizer, policy, suite, tasks, protocol, interface)
    return HeldOutResult(
        step=step,
        per_category={c: (s.passed, s.total) for c, s in result.scores.per_category.items()},
        seconds=result.wall_seconds,
        task_ids=tuple(t.id for t in tasks),
        protocol=result.protocol,  # the parser style resolved: the record names the style used
    )


def write_held_out(output_dir: str | Path, result: HeldOutResult) -> Path:
    """`held_out/step_NNNNNN.json`, written atomically (a resumed run that evaluates the same step replaces it)."""
    return write_json(held_out_path(output_dir, result.step), result.to_json())


class HeldOutEvaluation(TrainerCallback):
    """The trainer's held-out evaluation of `tasks` (module docstring): after every `eval_every_steps`-th optimizer
    step, the last one's only with `at_end` (without it, the caller scores the final policy itself: the held-out
    comparison's final stage)."""

    def __init__(self, trainer: SealTrainer, tasks: Sequence[SuiteTask], at_end: bool = True) -> None:
        self.trainer = trainer
        self.tasks = list(tasks)
        self.at_end = at_end

    def on_step_end(self, args, state, control, **kwargs):
        if not args.eval_every_steps or state.global_step % args.eval_every_steps:
            return
        if state.global_step >= state.max_steps and not self.at_end:
            return
        self.evaluate()

    def evaluate(self) -> HeldOutResult:
        """The evaluation now, on every rank; logged on the trainer log, written by the main process."""
        trainer = self.trainer
        step = trainer.state.global_step
        trainer.backends.sync_vllm(step)  # as TRL does before generating: the current weights
        with trainer.backends.at(step) as backend:
            policy, protocol = PolicyInfo(trainer.policy_id), held_out_protocol(trainer.args)
            result = evaluate_held_out(
                backend, trainer.processing_class, trainer.suite, self.tasks, protocol, policy, step
            )
        if trainer.accelerator.is_main_process:
            write_held_out(trainer.args.output_dir, result)
        # Trainer.log, not GRPOTrainer.log: the latter would flush (and clear) this step's training metrics early;
        # and logging resets `should_log`, which this step's own training log still needs
        should_log = trainer.control.should_log
        Trainer.log(trainer, result.log_metrics())
        trainer.control.should_log = should_log
        return result
