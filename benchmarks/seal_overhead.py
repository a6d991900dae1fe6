"""SEAL's overhead per training step, in two parts: its bookkeeping, and the longer prompts its interface shows.

Both arms train the tiny random policy (LoRA) on the same BFCL tasks for the same number of steps, generating
with the batched HF backend from the same seed. Vanilla switches off env_adaptation, reweighting and
closed_loop; SEAL has all three on (interface_mode 'full'). A SEAL step costs more for two reasons, reported
apart:

- bookkeeping: time spent inside SEAL's own functions during the step (diagnosing every rollout, gathering
  across ranks, the rho update, rollout weights, interface evolution and its snapshot store, the iteration
  records, SEAL's logged metrics, and rendering prompts and tool results through the interface). Measured
  directly: each of those functions is wrapped with a timer for the run (the names `seal_hub.training.trainer` calls
  them by; nested calls count once), and a function that is never called stops the benchmark, so the figure
  cannot silently drop a part. Line `seal bookkeeping / step: X.X%` (median over SEAL's steps; goal <= 2%).
  Not timed: the reweighting multiply inside `_generate_and_score_completions` (one tensor product).
- the interface's longer prompts (schema cues, the system note, recovery hints, guidelines): part of the method,
  they make generation and the update longer. The script prints the prompt tokens the evolved interface adds
  (per prompt, average over SEAL's counted rollouts, against the same task's prompt in the vanilla arm).

The vanilla arm is `SealTrainer` with the switches off, so it still diagnoses and writes records (printed too).
The arms are interleaved (vanilla, SEAL, then SEAL, vanilla, ...) for `--repeats` rounds, and every figure is
a median over the counted steps of all rounds, so one noisy run does not decide. The first step of every run
is a warm-up and is not counted. Each step is also split into rollout engine, bookkeeping, and the rest (TRL's
scoring and the update). Last line exactly `seal step time / vanilla: X.XXx` (median SEAL step / median
vanilla step), the line before it `seal bookkeeping / step: X.X%`.

    python benchmarks/seal_overhead.py [--steps 3] [--tasks 4] [--prompts-per-step 2] [--generations 2] [--repeats 2]
    python benchmarks/seal_overhead.py --quick     # one round of 2 small steps: checks the script, not the figure
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import statistics
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from unittest import mock

from transformers import TrainerCallback

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import seal_hub.training.trainer as trainer_module  # noqa: E402
from seal_hub.diagnosis import RolloutDiagnosis  # noqa: E402
from seal_hub.envs.bfcl import BfclSuite  # noqa: E402
from seal_hub.interface import InterfaceSnapshot  # noqa: E402
from seal_hub.interface.rho import RhoWindow  # noqa: E402
from seal_hub.models import PolicyConfig, build_tiny_model, load_policy, lora_config  # noqa: E402
from seal_hub.rollout import RolloutEngine  # noqa: E402
from seal_hub.training import SealConfig, SealTrainer  # noqa: E402

# SEAL's bookkeeping inside a step: (owner, attribute, component). Module functions are wrapped where the
# trainer looks them up; methods on their class.
BOOKKEEPING = (
    (BfclSuite, "diagnose", "diagnosis"),  # the suite labels its own rollouts
    (trainer_module, "gather_object", "gathering"),
    (RhoWindow, "step", "rho update"),
    (RolloutDiagnosis, "weight", "rollout weights"),
    (SealTrainer, "_update_loop", "interface evolution"),
    (trainer_module, "iteration_metrics", "records"),
    (trainer_module, "write_iteration", "records"),
    (SealTrainer, "_log_seal_metrics", "logged metrics"),
    (InterfaceSnapshot, "render_tools", "interface rendering"),
    (InterfaceSnapshot, "system_prompt", "interface rendering"),
    (InterfaceSnapshot, "render_result", "interface rendering"),
)
ROLLOUT = (RolloutEngine, "run", "rollout engine")
RENDERING = "interface rendering"  # runs inside the rollout engine


@dataclass
class Run:
    """What one training run measured, per counted step."""

    arm: str
    step_seconds: list[float] = field(default_factory=list)
    bookkeeping: list[dict[str, float]] = field(default_factory=list)  # per step: component -> seconds
    rollout_seconds: list[float] = field(default_factory=list)
    prompts: list[tuple[str, int, str]] = field(default_factory=list)  # counted rollouts: task, prompt tokens, version
    calls: dict[str, int] = field(default_factory=lambda: defaultdict(int))


class Probe(TrainerCallback):
    """Step boundaries, and the timers that charge the wrapped functions' time to the step they ran in."""

    def __init__(self, arm: str) -> None:
        self.run = Run(arm)
        self._step = -1  # index of the step in progress; the first (0) is the warm-up
        self._start = 0.0
        self._now: dict[str, float] = defaultdict(float)
        self._rollout = 0.0
        self._depth = 0

    def on_step_begin(self, args, state, control, **kwargs):
        self._step += 1
        self._now, self._rollout = defaultdict(float), 0.0
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        seconds = time.perf_counter() - self._start
        if self._step >= 1:
            self.run.step_seconds.append(seconds)
            self.run.bookkeeping.append(dict(self._now))
            self.run.rollout_seconds.append(self._rollout)

    def timed(self, function, component: str):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            if self._depth:  # nested inside another timed function: already counted there
                return function(*args, **kwargs)
            self._depth += 1
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self._depth -= 1
                self._now[component] += time.perf_counter() - start
                self.run.calls[component] += 1

        return wrapper

    def engine_timed(self, function):
        @functools.wraps(function)
        def wrapper(engine, *args, **kwargs):
            start = time.perf_counter()
            trajectories = function(engine, *args, **kwargs)
            self._rollout += time.perf_counter() - start
            if self._step >= 1:
                self.run.prompts += [(t.task_id, t.prompt_length, t.interface_version) for t in trajectories]
            return trajectories

        return wrapper

    def patches(self) -> contextlib.ExitStack:
        stack = contextlib.ExitStack()
        for owner, name, component in BOOKKEEPING:
            if not hasattr(owner, name):
                raise SystemExit(
                    f"{getattr(owner, '__name__', owner)}.{name} no longer exists: update BOOKKEEPING in this script"
                )
            stack.enter_context(mock.patch.object(owner, name, self.timed(getattr(owner, name), component)))
        owner, name, _ = ROLLOUT
        stack.enter_context(mock.patch.object(owner, name, self.engine_timed(getattr(owner, name))))
        return stack


def train(arm: str, model_dir: str, out: str, settings: argparse.Namespace, tasks) -> Run:
    switches = arm == "seal"
    policy = PolicyConfig(
        model_name_or_path=model_dir, use_peft=True, lora_r=4, lora_alpha=8, lora_target_modules=["q_proj", "v_proj"]
    )
    model, tokenizer = load_policy(policy)
    args = SealConfig(
        output_dir=out,
        per_device_train_batch_size=settings.batch,
        num_generations=settings.generations,
        max_steps=settings.steps,
        learning_rate=1e-3,
        beta=0.0,
        use_cpu=True,
        seed=0,
        report_to=[],
        save_strategy="no",
        logging_steps=1,
        disable_tqdm=True,
        max_new_tokens=settings.max_new_tokens,
        max_steps_per_turn=2,
        max_completion_length=8192,
        max_context_tokens=16384,
        env_adaptation=switches,
        reweighting=switches,
        closed_loop=switches,
        interface_mode="full",
        gradient_checkpointing=False,
    )
    probe = Probe(arm)
    with probe.patches():
        peft_config = lora_config(policy)
        trainer = SealTrainer(
            model,
            args=args,
            processing_class=tokenizer,
            callbacks=[probe],
            peft_config=peft_config,
            suite=BfclSuite(),
            train_tasks=tasks,
            policy_id="tiny",
        )
        trainer.train()
    run = probe.run
    step = statistics.median(run.step_seconds)
    print(
        f"{arm:8s}: {len(run.step_seconds)} steps counted, median {step:.2f} s "
        f"({', '.join(f'{t:.2f}' for t in run.step_seconds)}); interface at the end {trainer.interface.version}"
    )
    return run


def median_share(runs: list[Run], part) -> float:
    """Median over all counted steps of `part(step seconds, bookkeeping, rollout seconds)` / step seconds."""
    shares = [
        part(seconds, books, rollout) / seconds
        for run in runs
        for seconds, books, rollout in zip(run.step_seconds, run.bookkeeping, run.rollout_seconds, strict=True)
    ]
    return statistics.median(shares)


def report(vanilla: list[Run], seal: list[Run]) -> None:
    for runs, arm in ((vanilla, "vanilla"), (seal, "seal")):
        for component in sorted({c for _, _, c in BOOKKEEPING}):
            if runs is seal and not any(run.calls[component] for run in runs):
                raise SystemExit(f"{component} was never called in a SEAL step: update BOOKKEEPING in this script")
        steps = [s for run in runs for s in run.step_seconds]
        engine = median_share(runs, lambda s, b, r: r)
        rendering = median_share(runs, lambda s, b, r: b.get(RENDERING, 0.0))
        books = median_share(runs, lambda s, b, r: sum(b.values()) - b.get(RENDERING, 0.0))
        rest = median_share(runs, lambda s, b, r: s - r - sum(b.values()) + b.get(RENDERING, 0.0))
        print(
            f"{arm:8s} step split (medians of {statistics.median(steps):.2f} s): rollout engine {100 * engine:.1f}% "
            f"(interface rendering in it {100 * rendering:.2f}%), other bookkeeping {100 * books:.2f}%, "
            f"TRL scoring, update and the rest {100 * rest:.1f}%"
        )
    components = sorted({c for _, _, c in BOOKKEEPING})
    per_component = {
        c: statistics.median([b.get(c, 0.0) for run in seal for b in run.bookkeeping]) for c in components
    }
    print(
        "seal bookkeeping per step (median ms): "
        + ", ".join(f"{c} {1000 * s:.1f}" for c, s in sorted(per_component.items(), key=lambda kv: -kv[1]))
    )
    base = {task: length for run in vanilla for task, length, _ in run.prompts}
    added = [length - base[task] for run in seal for task, length, _ in run.prompts if task in base]
    versions = sorted({v for run in seal for _, _, v in run.prompts})
    mean_base = statistics.mean(base.values())
    print(
        f"prompt tokens the interface adds: {statistics.mean(added):.0f} per prompt on average "
        f"({len(added)} SEAL prompts, interface {', '.join(versions)}; vanilla prompts {mean_base:.0f} tokens)"
    )
    vanilla_step = statistics.median([s for run in vanilla for s in run.step_seconds])
    seal_step = statistics.median([s for run in seal for s in run.step_seconds])
    print(f"seal bookkeeping / step: {100 * median_share(seal, lambda s, b, r: sum(b.values())):.1f}%")
    print(f"seal step time / vanilla: {seal_step / vanilla_step:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="steps per run; the first is a warm-up")
    parser.add_argument("--tasks", type=int, default=4, help="BFCL tasks trained on, taken in turn")
    parser.add_argument("--prompts-per-step", type=int, default=2, help="tasks per step")
    parser.add_argument("--generations", type=int, default=2, help="rollouts per task (GRPO group)")
    parser.add_argument("--repeats", type=int, default=2, help="rounds of (vanilla, SEAL), order alternating")
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--quick", action="store_true", help="1 round of 2 steps, 1 task x 2 rollouts, 8 tokens")
    settings = parser.parse_args()
    if settings.quick:
        settings.steps, settings.tasks, settings.repeats, settings.prompts_per_step = 2, 1, 1, 1
        settings.generations, settings.max_new_tokens = 2, 8
    if settings.steps < 2 or min(settings.repeats, settings.tasks, settings.prompts_per_step) < 1:
        parser.error("--steps must be >= 2 (the first is a warm-up); --repeats, --tasks, --prompts-per-step >= 1")
    if settings.generations < 2:
        parser.error("--generations must be >= 2: GRPO compares rollouts of the same task")
    settings.batch = settings.prompts_per_step * settings.generations
    suite = BfclSuite()
    tasks = list(suite.tasks.values())[: settings.tasks]
    runs: dict[str, list[Run]] = {"vanilla": [], "seal": []}
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = str(build_tiny_model(os.path.join(tmp, "tiny")))
        for round_ in range(settings.repeats):
            order = ("vanilla", "seal") if round_ % 2 == 0 else ("seal", "vanilla")
            for arm in order:
                out = os.path.join(tmp, f"{arm}-{round_}")
                runs[arm].append(train(arm, model_dir, out, settings, tasks))
    report(runs["vanilla"], runs["seal"])


if __name__ == "__main__":
    main()
