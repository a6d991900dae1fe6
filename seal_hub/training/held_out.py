"""Held-out evaluation during training: a fixed subset of the test split, rolled out with the paper's protocol
(`seal_hub.evaluation.EvalProtocol`: null interface, greedy decoding, withheld tools executed and BFCL's step
limit, as `seal-hub eval` scores), counted per category.

`evaluate_held_out` is one function over the existing `RolloutEngine`, so the trainer can call it every
`eval_every_steps` and a later evaluation harness can replace it without touching the trainer; it runs any
suite's episodes. `held_out_tasks` picks the subset: categories interleaved in the split's order (BFCL: base,
miss_func, miss_param, long_context, base, ...), so a small count still covers every category. The result is
logged as `eval_success_rate` and `eval_success_rate/<category>` (trackio and wandb show them as `eval/...`) and
written to `held_out/step_NNNNNN.json` in the run directory, where `seal-hub report` finds it.

Not covered: the full 400-task evaluation with its own records and cards (`seal-hub eval`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seal_hub.atomic import write_json
from seal_hub.envs.suite import Suite, SuiteTask, in_turn
from seal_hub.evaluation.protocol import EvalProtocol
from seal_hub.interface import InterfaceSnapshot
from seal_hub.models.parser_style import resolve_parser_style
from seal_hub.rollout import GenerationBackend, PolicyInfo, RolloutEngine

HELD_OUT_DIR = "held_out"


@dataclass(frozen=True)
class HeldOutSettings:
    """How episodes run during a held-out evaluation (the trainer fills it from `SealConfig`). Tokens per step
    are `eval_max_new_tokens` (default 512, `seal-hub eval`'s), not the training reply budget."""

    max_new_tokens: int = 512  # seal-hub eval's default
    max_context_tokens: int = 8192
    max_steps_per_turn: int = 20
    max_live_episodes: int = 16
    parser_style: str | None = None  # None: inferred from the chat template


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
    suite: Suite, test_ids: Sequence[str], count: int, categories: Sequence[str] | None = None
) -> list[SuiteTask]:
    """The first `count` tasks of the test split (of `categories` when given), taking the categories in turn:
    the tasks `seal-hub eval --split test --limit COUNT [--categories ...]` scores."""
    if count < 1:
        raise ValueError(f"eval_tasks must be >= 1, got {count}")
    if not test_ids:
        raise ValueError("the split has no test tasks to evaluate on; give a split file with a 'test' list")
    return in_turn(suite.select(list(test_ids)), count, categories)


def evaluate_held_out(
    backend: GenerationBackend,
    tokenizer,
    suite: Suite,
    tasks: Sequence[SuiteTask],
    settings: HeldOutSettings,
    policy: PolicyInfo,
    step: int,
) -> HeldOutResult:
    """One greedy rollout per task on the null interface under `seal-hub eval`'s protocol; verdicts per category."""
    protocol = EvalProtocol(
        max_new_tokens=settings.max_new_tokens,
        max_context_tokens=settings.max_context_tokens,
        max_steps_per_turn=settings.max_steps_per_turn,
        parser_style=resolve_parser_style(tokenizer, settings.parser_style),  # the record names the style used
        max_live_episodes=settings.max_live_episodes,
    )
    config = protocol.rollout_config()
    engine = RolloutEngine(backend, tokenizer, suite, config, policy, InterfaceSnapshot.null(suite.name))
    start = time.perf_counter()
    trajectories = engine.run(list(tasks))
    counts: dict[str, list[int]] = {}
    for trajectory in trajectories:
        entry = counts.setdefault(trajectory.category, [0, 0])
        entry[0] += int(trajectory.passed)
        entry[1] += 1
    return HeldOutResult(
        step=step,
        per_category={c: (p, t) for c, (p, t) in counts.items()},
        seconds=time.perf_counter() - start,
        task_ids=tuple(t.id for t in tasks),
        protocol=protocol,
    )


def write_held_out(output_dir: str | Path, result: HeldOutResult) -> Path:
    """`held_out/step_NNNNNN.json`, written atomically (a resumed run that evaluates the same step replaces it)."""
    path = Path(output_dir) / HELD_OUT_DIR / f"step_{result.step:06d}.json"
    return write_json(path, result.to_json())
