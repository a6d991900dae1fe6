"""What a training run changed, measured held-out: the base model, after the SFT warm-up, after SEAL.

With `held_out_comparison`, the training script evaluates the policy three times on the same held-out tasks
(`held_out_tasks`: `eval_tasks` tasks of the test split, of `categories` when given, categories taken in turn)
through the one evaluation path `seal-hub eval` uses (`evaluate_policy`), under the run's held-out protocol
(`held_out_protocol`: null interface, greedy, the suite's own step rule, the trainer's periodic evaluation's too),
each into its own evaluation directory under the run:

    eval/base/      the model before any training
    eval/warmup/    after the SFT warm-up (only with sft_warmup_steps)
    eval/final/     after the last SEAL iteration, recorded as the published adapter at that iteration

so `seal-hub report RUN/eval/base RUN/eval/final` compares them, `seal-hub eval --adapter NS/RUN-adapter@iter-K`
with the printed flags scores the same tasks the same way, and the final evaluation can be published on the
adapter's card (model-index) as `seal-hub eval --publish` does. Each directory resumes like any evaluation.
`HeldOutComparison` is the one object the script holds for it: `base` and `warmup` before training (the main
process evaluates, the others go on), `final` after it, which returns the summary's held-out block.

Not covered: confidence intervals over seeds (one run is one seed; `seal_hub.experiment` runs several).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seal_hub.defaults import MAX_LIVE_EPISODES
from seal_hub.envs.suite import Suite, SuiteTask
from seal_hub.evaluation import EvalProtocol, EvalSpec, evaluate_policy, interface_record
from seal_hub.evaluation.harness import EvalResult
from seal_hub.evaluation.results import RESULTS_JSON
from seal_hub.evaluation.scores import CategoryScore, Scores
from seal_hub.generation.weights import (
    AS_LOADED,
    GenerationWeights,
    backend_for,
    merges_by_default,
    with_generation_dtype,
)
from seal_hub.interface import InterfaceSnapshot
from seal_hub.rollout import PolicyInfo
from seal_hub.training.held_out import HeldOutResult, held_out_protocol, write_held_out
from seal_hub.training.run_records import held_out_files

if TYPE_CHECKING:
    from seal_hub.training.config import SealConfig
    from seal_hub.training.selection import TaskSelection
    from seal_hub.training.trainer import SealTrainer

EVAL_DIR = "eval"
STAGES = ("base", "warmup", "final")


@dataclass(frozen=True)
class HeldOutPlan:
    """Which tasks and how: what every stage of the comparison shares."""

    suite: Suite
    tasks: tuple[SuiteTask, ...]
    protocol: EvalProtocol
    split_source: str
    categories: tuple[str, ...] = ()
    split: str = "test"  # the split the tasks were taken from (`eval_split`)

    def eval_flags(self) -> str:
        """The `seal-hub eval` flags that select and score the same tasks the same way."""
        flags = [self.suite.command_flags(), f"--split {self.split}", f"--limit {len(self.tasks)}"]
        if self.split_source not in ("default", "paper"):
            flags.append(f"--split_file {self.split_source}")
        if self.categories:
            flags.append(f"--categories {','.join(self.categories)}")
        flags.append(f"--max_new_tokens {self.protocol.max_new_tokens}")
        if self.protocol.max_live_episodes != MAX_LIVE_EPISODES:  # which rows share a batch changes the rounding
            flags.append(f"--max_live_episodes {self.protocol.max_live_episodes}")
        return " ".join(flags)


def evaluate_stage(
    plan: HeldOutPlan,
    model,
    tokenizer,
    out: str | Path,
    model_record: dict[str, Any],
    adapter_record: dict[str, Any] | None = None,
    weights: GenerationWeights = AS_LOADED,
) -> EvalResult:
    """One stage: `model` (as it is now) on the plan's tasks into `out`, recorded as `model_record` (and
    `adapter_record`, the published adapter these weights are) exactly as `seal-hub eval` records a run; generating
    with the weights as `weights` says (LoRA merged into a copy, a generation dtype: recorded in the model record)."""
    interface = InterfaceSnapshot.null(plan.suite.name)
    was_training = model.training
    model.eval()
    try:
        policy_id = adapter_record["repo"] if adapter_record else model_record["id"]
        revision = adapter_record["commit"] if adapter_record else model_record.get("revision")
        categories = f"; categories {','.join(plan.categories)}" if plan.categories else ""
        with backend_for(model, tokenizer, weights) as (backend, dtype):
            spec = EvalSpec(
                suite=plan.suite.name,
                split=plan.split,
                split_source=plan.split_source + categories,
                model=with_generation_dtype(model_record, dtype),
                adapter=adapter_record,
                interface=interface_record(interface, "null"),
            )
            return evaluate_policy(
                backend,
                tokenizer,
                PolicyInfo(policy_id, revision),
                plan.suite,
                list(plan.tasks),
                plan.protocol,
                interface,
                spec,
                out,
                progress=True,
            )
    finally:
        model.train(was_training)


def stage_dir(output_dir: str | Path, stage: str) -> Path:
    return Path(output_dir) / EVAL_DIR / stage


def read_stage(out: str | Path) -> Scores | None:
    """The scores of a finished stage's evaluation directory (None when it has not finished)."""
    path = Path(out) / RESULTS_JSON
    if not path.is_file():
        return None
    return Scores.from_dict(json.loads(path.read_text(encoding="utf-8"))["scores"])


def held_out_curve(output_dir: str | Path, before_step: int) -> dict[str, Scores]:
    """The held-out evaluations the trainer made during training (`eval_every_steps`, `held_out/step_N.json`),
    steps before `before_step`, as `step N` -> scores: the learning curve between the warm-up and the final stage."""
    curve = {}
    for path in held_out_files(output_dir):
        record = json.loads(path.read_text(encoding="utf-8"))
        if record["step"] < before_step:
            per = {c: CategoryScore(v["passed"], v["total"]) for c, v in record["per_category"].items()}
            curve[f"step {record['step']}"] = Scores(per)
    return curve


def comparison_lines(
    plan: HeldOutPlan, results: dict[str, Scores], reproduce: str | None, final_step: int | None = None
) -> list[str]:
    """The summary's held-out block: a row per stage (base model, after the warm-up, each held-out evaluation made
    during training as `step N`, after SEAL), then the learning curve in one line. Its last two lines are the
    contract other tools read: `held-out after warm-up: W.W% on N tasks (SUITE)` (with a warm-up) and
    `held-out success: X.X% -> Y.Y% on N tasks (SUITE)` (the base model, then after SEAL)."""
    suite, n = plan.suite.name, len(plan.tasks)
    names = {"base": "base model", "warmup": "after warm-up", "final": "after SEAL"}
    categories = list(next(iter(results.values())).per_category)
    width = max(14, *(len(names.get(stage, f"GRPO {stage}")) for stage in results))
    lines = [
        f"\nheld-out evaluation: {n} tasks of the {suite} test split (never trained on), "
        f"seal-hub eval's protocol (greedy, null interface, max_new_tokens {plan.protocol.max_new_tokens})",
        f"{'':<{width}} {'avg':>6}  " + "  ".join(f"{c:>{max(6, len(c))}}" for c in categories),
    ]
    for stage, scores in results.items():
        per = scores.per_category
        cells = "  ".join(f"{per[c].success_rate:>{max(6, len(c)) - 1}.1f}%" for c in categories)
        lines.append(f"{names.get(stage, f'GRPO {stage}'):<{width}} {scores.average:>5.1f}%  {cells}")
    at = {"base": "base", "warmup": "warm-up", "final": f"step {final_step}" if final_step else "final"}
    curve = [f"{at.get(stage, stage)} {scores.average:.1f}%" for stage, scores in results.items()]
    lines.append("held-out learning curve: " + " -> ".join(curve))
    if reproduce:
        lines.append(f"reproduce: {reproduce}")
    if "warmup" in results:
        lines.append(f"held-out after warm-up: {results['warmup'].average:.1f}% on {n} tasks ({suite})")
    before, after = results["base"].average, results["final"].average
    lines.append(f"held-out success: {before:.1f}% -> {after:.1f}% on {n} tasks ({suite})")
    return lines


def stage_point(result: EvalResult, step: int, protocol: EvalProtocol) -> HeldOutResult:
    """A comparison stage's scores as a training-time held-out point at `step` (`held_out/step_N.json`), so the
    final stage ends the learning curve that `seal-hub report` plots."""
    per = {name: (score.passed, score.total) for name, score in result.scores.per_category.items()}
    return HeldOutResult(
        step=step,
        per_category=per,
        seconds=float(result.results.get("wall_seconds", result.wall_seconds)),
        task_ids=tuple(t.task_id for t in result.trajectories),
        protocol=protocol,
    )


@dataclass
class HeldOutComparison:
    """A run's held-out comparison: the same plan scored before training (`base`), after the warm-up (`warmup`)
    and after SEAL (`final`), each stage into `output_dir/eval/<stage>`, the policy recorded as `base_record`
    (`{"id": model, "revision": ...}`). Only `main_process` evaluates; `weights`: how generation takes the weights
    (LoRA merged, the generation dtype), as in the run's rollouts."""

    plan: HeldOutPlan
    output_dir: str
    base_record: dict[str, Any]
    weights: GenerationWeights = AS_LOADED
    main_process: bool = True

    @classmethod
    def of(cls, selection: TaskSelection, config: SealConfig, base_record: dict[str, Any], main_process: bool):
        """The comparison of a run's selected tasks (`TaskSelection.held_out`) under its held-out protocol."""
        protocol, source = held_out_protocol(config), selection.split.source
        plan = HeldOutPlan(
            selection.suite, selection.held_out, protocol, source, selection.categories, selection.eval_split
        )
        return cls(plan, config.output_dir, base_record, config.generation_weights(), main_process)

    def base(self, model, tokenizer) -> None:
        """The model before any training, into `eval/base`."""
        if self.main_process:
            out = stage_dir(self.output_dir, "base")
            evaluate_stage(self.plan, model, tokenizer, out, self.base_record, None, self.weights)

    def warmup(self, model, tokenizer, steps: int) -> None:
        """The model after the SFT warm-up of `steps` steps, into `eval/warmup`."""
        if self.main_process:
            warm = {"id": f"{self.base_record['id']} + SFT warm-up ({steps} steps)"}
            out = stage_dir(self.output_dir, "warmup")
            evaluate_stage(self.plan, model, tokenizer, out, self.base_record | warm, None, self.weights)

    def final(self, trainer: SealTrainer, tokenizer) -> list[str]:
        """The final policy on the held-out tasks, recorded as the adapter published at the last iteration (and
        the result published on its card, as `seal-hub eval --publish` does); then the comparison's lines."""
        from seal_hub.hub.sources import resolve_reference

        plan, output_dir, step = self.plan, self.output_dir, trainer.state.global_step
        adapter_record, reproduce, repo = None, None, None
        if trainer.publish is not None and step > 0:  # the adapter these weights are, as published
            registry = trainer.publish.registry()
            ref = f"{trainer.publish.repos.adapter}@iter-{step}"
            resolved = resolve_reference(ref, "adapter", registry=registry).source
            adapter_record = {"ref": ref, "repo": resolved.repo_id, "revision": resolved.revision}
            adapter_record |= {"commit": resolved.commit, "backend": resolved.backend}
            scheme = "local://" if resolved.backend == "local" else ""
            reproduce = f"seal-hub eval --model {self.base_record['id']} --adapter {scheme}{ref} {plan.eval_flags()}"
            dtype = self.weights.resolve(trainer.model)
            if dtype is not None:  # the same numerics on a machine whose `auto` would pick another dtype
                reproduce += f" --generation_dtype {str(dtype).removeprefix('torch.')}"
            merge = self.weights.merge_lora
            if merge != merges_by_default(trainer.model):  # not what `seal-hub eval` would do unasked
                reproduce += f" --merge_lora_for_generation {str(merge).lower()}"
            repo = f"{trainer.publish.run}-eval"
        final = stage_dir(output_dir, "final")
        model, weights = trainer.model, self.weights
        result = evaluate_stage(plan, model, tokenizer, final, self.base_record, adapter_record, weights)
        lines = []
        if repo is not None:
            from seal_hub.evaluation.publish import publish_evaluation

            lines += publish_evaluation(final, repo, registry)
        stages = {s: read_stage(stage_dir(output_dir, s)) for s in ("base", "warmup")}
        stages = {s: scores for s, scores in stages.items() if scores is not None}
        stages |= held_out_curve(output_dir, before_step=step) | {"final": result.scores}
        if step > 0:  # the curve's last point, where `seal-hub report` reads the training-time evaluations
            write_held_out(output_dir, stage_point(result, step, plan.protocol))
        return lines + comparison_lines(plan, stages, reproduce, final_step=step)
