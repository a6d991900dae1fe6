"""SEAL's overhead per training step: full SEAL against vanilla GRPO, same tiny configuration, one run.

Both train the tiny random policy (LoRA) on the same BFCL tasks for the same number of steps, generating
with the batched HF backend from the same seed. Vanilla switches off env_adaptation, reweighting and
closed_loop; SEAL has all three on, so its steps also diagnose every turn, update rho, evolve the interface
(whose schema cues and system note make prompts longer) and reweight advantages. The first step of each is
a warm-up and is not counted. Prints the mean step time of both; last line exactly
`seal step time / vanilla: X.XXx`.

    python benchmarks/seal_overhead.py [--steps 5] [--tasks 4]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from transformers import TrainerCallback

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from seal_hub.envs.bfcl import BfclSuite  # noqa: E402
from seal_hub.models import PolicyConfig, build_tiny_model, load_policy, lora_config  # noqa: E402
from seal_hub.trainer import SealConfig, SealTrainer  # noqa: E402


class StepTimer(TrainerCallback):
    def __init__(self) -> None:
        self.times: list[float] = []
        self._start = 0.0

    def on_step_begin(self, args, state, control, **kwargs):
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self.times.append(time.perf_counter() - self._start)


def run(name: str, switches: bool, model_dir: str, out: str, steps: int, tasks) -> float:
    policy = PolicyConfig(
        model_name_or_path=model_dir, use_peft=True, lora_r=4, lora_alpha=8, lora_target_modules=["q_proj", "v_proj"]
    )
    model, tokenizer = load_policy(policy)
    args = SealConfig(
        output_dir=out,
        per_device_train_batch_size=8,
        num_generations=4,
        max_steps=steps,
        learning_rate=1e-3,
        beta=0.0,
        use_cpu=True,
        seed=0,
        report_to=[],
        save_strategy="no",
        logging_steps=1,
        disable_tqdm=True,
        max_new_tokens=24,
        max_steps_per_turn=2,
        max_completion_length=8192,
        max_context_tokens=16384,
        env_adaptation=switches,
        reweighting=switches,
        closed_loop=switches,
        gradient_checkpointing=False,
    )
    timer = StepTimer()
    trainer = SealTrainer(
        model,
        args,
        BfclSuite(),
        tasks,
        tokenizer,
        peft_config=lora_config(policy),
        policy_id="tiny",
        callbacks=[timer],
    )
    trainer.train()
    counted = timer.times[1:]
    mean = sum(counted) / len(counted)
    print(
        f"{name:8s}: {len(counted)} steps counted, mean step time {mean:.3f} s "
        f"(all: {', '.join(f'{t:.2f}' for t in timer.times)}); interface at the end {trainer.interface.version}"
    )
    return mean


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=4)
    args = parser.parse_args()
    suite = BfclSuite()
    tasks = list(suite.tasks.values())[: args.tasks]
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = str(build_tiny_model(os.path.join(tmp, "tiny")))
        vanilla = run("vanilla", False, model_dir, os.path.join(tmp, "vanilla"), args.steps, tasks)
        seal = run("seal", True, model_dir, os.path.join(tmp, "seal"), args.steps, tasks)
    print(f"seal step time / vanilla: {seal / vanilla:.2f}x")


if __name__ == "__main__":
    main()
