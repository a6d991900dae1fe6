"""Where one GRPO step of the CPU demo goes, with TRL's loss forward and with the shared-prompt forward.

Trains the demo's policy (SmolLM2-135M-Instruct with the demo's LoRA, `seal_hub/scripts/configs/demo_cpu.yaml`) on
the demo's bfcl-single tasks with the demo's GRPO settings, without the warm-up and the held-out evaluations, for
`--steps` steps, twice: once with `share_prompt_forward: false` (TRL's `_get_per_token_logps_and_entropies`, every
row's prompt run through the model: the baseline) and once with it on (each distinct prompt once,
`seal_hub.training.shared_prompt`). Each step is split into

- generation: the rollout engine (`RolloutEngine.run`: prefill, decode, tool-call parsing, verdicts);
- log-prob forward: the loss's forward pass (`_get_per_token_logps_and_entropies`, under autograd);
- backward: `accelerator.backward`;
- SEAL: diagnosis, the rho update, rollout weights, interface evolution, records (`SealTrainer._update_loop`
  and what it calls) is inside "rest" with TRL's own scoring, the optimizer step and checkpointing.

The first step of each arm is a warm-up and is not counted; figures are means over the other steps. The two
arms see the same tasks from the same seed, so their rollouts (and so the completions scored) are the same up
to float differences in the policy after the first update. Last line exactly
`loss forward+backward, shared prompt / TRL: X.XXx` (lower is better).

`--compare bf16` times instead the loss in fp32 (the baseline) against the same step under bf16 autocast
(`--bf16 true`: the loss forward and backward in bf16 where the CPU has it, the LoRA weights and the optimizer in
fp32), both with the shared-prompt forward, and prints the mean loss of each arm's first step (the same rollouts:
the same sampled completions scored in two precisions). Last line exactly
`loss forward+backward, bf16 autocast / fp32: X.XXx`. `--config` takes another recipe config (e.g.
examples/smart_home/config.yaml, from the repository's root).

    python benchmarks/demo_step.py [--steps 3] [--smoke] [--compare bf16] [--config PATH]
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from unittest import mock

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from transformers import TrainerCallback  # noqa: E402

from seal_hub.rollout import RolloutEngine  # noqa: E402
from seal_hub.scripts import seal  # noqa: E402
from seal_hub.training import SealTrainer  # noqa: E402

DEMO = seal.DEFAULT_CONFIG  # the demo's config (package data)
PARTS = ("generation", "log-prob forward", "backward", "rest")
# --smoke: the demo's settings at a smoke test's size (the tiny random model, one task, two rollouts, 8 new tokens)
SMOKE = ["--num_train_tasks", "1", "--per_device_train_batch_size", "2", "--num_generations", "2"]
SMOKE += ["--max_new_tokens", "8"]


class _Steps(TrainerCallback):
    """Wall time of every optimizer step, and the parts' accumulated time at each step's end."""

    def __init__(self, totals: dict[str, float]) -> None:
        self.totals, self.rows, self.start = totals, [], None

    def on_step_begin(self, args, state, control, **kwargs):
        self.start, self.before = time.perf_counter(), dict(self.totals)

    def on_step_end(self, args, state, control, **kwargs):
        wall = time.perf_counter() - self.start
        parts = {k: self.totals[k] - self.before.get(k, 0.0) for k in PARTS[:-1]}
        self.rows.append({**parts, "rest": wall - sum(parts.values()), "wall": wall})

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs and self.rows:
            self.rows[-1]["loss"] = float(logs["loss"])


def _timed(totals: dict[str, float], part: str, function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            totals[part] += time.perf_counter() - start

    return wrapper


def run_arm(shared: bool, steps: int, out: Path, more: list[str], config: Path = DEMO) -> list[dict[str, float]]:
    totals: dict[str, float] = defaultdict(float)
    steps_callback = _Steps(totals)
    original_init = SealTrainer.__init__

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.add_callback(steps_callback)
        self.accelerator.backward = _timed(totals, "backward", self.accelerator.backward)

    flags = ["--output_dir", str(out), "--max_steps", str(steps), "--sft_warmup_steps", "0"]
    flags += ["--held_out_comparison", "false", "--publish_run", "", "--save_strategy", "no"]
    flags += ["--share_prompt_forward", str(shared).lower(), "--disable_tqdm", "true", *more]
    args = seal.make_parser().parse_args_and_config(["--config", str(config), *flags])
    args[0].publish_run = None
    logps = _timed(totals, "log-prob forward", SealTrainer._get_per_token_logps_and_entropies)
    with (
        mock.patch.object(SealTrainer, "__init__", init),
        mock.patch.object(RolloutEngine, "run", _timed(totals, "generation", RolloutEngine.run)),
        mock.patch.object(SealTrainer, "_get_per_token_logps_and_entropies", logps),
        mock.patch.object(seal, "run_summary", lambda *a, **k: ""),
    ):
        seal.main(*args)
    return steps_callback.rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3, help="steps per arm; the first is a warm-up")
    parser.add_argument(
        "--smoke", action="store_true", help="the tiny random model, 1 task x 2 rollouts, 8 tokens (the tests' run)"
    )
    parser.add_argument("--compare", choices=["shared_prompt", "bf16"], default="shared_prompt", help="the two arms")
    parser.add_argument("--config", type=Path, default=DEMO, help="the recipe config whose GRPO step is timed")
    options = parser.parse_args()
    if options.steps < 2:
        parser.error("--steps must be >= 2 (the first step is not counted)")
    if options.compare == "bf16":
        arms = {"fp32": (True, ["--bf16", "false"]), "bf16 autocast": (True, ["--bf16", "true"])}
    else:
        arms = {"TRL": (False, []), "shared prompt": (True, [])}  # names: the contract line
    means, first_loss = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        more = []
        if options.smoke:
            from seal_hub.models import build_tiny_model

            more = ["--model_name_or_path", str(build_tiny_model(Path(tmp) / "tiny")), *SMOKE]
        for name, (shared, flags) in arms.items():
            rows = run_arm(shared, options.steps, Path(tmp) / name.replace(" ", "_"), [*more, *flags], options.config)
            first_loss[name] = rows[0].get("loss")
            means[name] = {key: statistics.mean(row[key] for row in rows[1:]) for key in (*PARTS, "wall")}
    print(f"one GRPO step of {options.config.name} (mean of {options.steps - 1} after a warm-up step), seconds:")
    print(f"{'':<18}" + "".join(f"{part:>18}" for part in (*PARTS, "wall")))
    for name, mean in means.items():
        print(f"{name:<18}" + "".join(f"{mean[part]:>18.1f}" for part in (*PARTS, "wall")))
    baseline, other = means
    loss = {name: m["log-prob forward"] + m["backward"] for name, m in means.items()}
    if options.compare == "bf16":
        print("first step's loss (the same rollouts): " + ", ".join(f"{n} {v}" for n, v in first_loss.items()))
    print(f"step wall, {other} / {baseline}: {means[other]['wall'] / means[baseline]['wall']:.2f}x")
    print(f"loss forward+backward, {other} / {baseline}: {loss[other] / loss[baseline]:.2f}x")


if __name__ == "__main__":
    main()
