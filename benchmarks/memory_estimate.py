"""Training-memory estimate against measurement: `seal-hub estimate`'s formulas vs real training steps on CPU.

Each case is a random-weight Qwen2 model (fp32, CPU) of a given size, trained for one GRPO-shaped step: a
padded micro-batch (so transformers builds the boolean attention mask, as in a GRPO batch), the prompt's
labels masked, per-token log-probabilities from TRL 1.16's fused LM head (`add_fused_lm_head`, the one
`GRPOTrainer` installs), a policy-gradient loss over them, backward, and a fused AdamW step (TRL's default
`adamw_torch_fused`); LoRA (PEFT, all seven projections) or full fine-tuning, with and without gradient
checkpointing (non-reentrant, as TRL sets it).

How it is measured: every case runs in a fresh subprocess with ``MALLOC_MMAP_THRESHOLD_=65536`` (glibc then
maps every large block and returns it on free, so the resident set follows what torch holds: torch's CPU
allocator has no ``max_memory_allocated``). The subprocess first runs one step of a tiny model (thread pools,
kernels and lazy imports get their memory now, not in the measurement), then resets the kernel's peak
resident set (``VmHWM``, by writing 5 to ``/proc/self/clear_refs``), reads its resident set as the base,
builds the model and the optimizer with its state allocated (AdamW's moments exist from the second step on),
and runs the step. Measured = ``VmHWM`` - base: weights, trainable state, activations, the log-prob head and
every transient, as the process holds them. Estimated = the estimate's persistent parts + its update phase for
the same shapes (`seal_hub.estimate.parts`, with ``use_cpu``: fp32, the head's torch fallback), without the
rollout (not run here) and the CUDA allowance.

Prints one line per case (estimate, measured, ratio) and last line exactly
``memory estimate / measured: X.XXx``: the case whose ratio is farthest from 1 (the goal: within 0.8x-1.25x).
Each case stays under about 1 GB; the whole run takes a few minutes on 2 cores.

Single process only: the estimate's ZeRO-3 parts per rank (parameter, gradient and optimizer-state partitions,
the parameters DeepSpeed keeps whole) are checked against a real two-process ZeRO-3 run by
``tests/test_deepspeed.py::test_zero3_memory_estimate_matches_what_each_rank_holds`` (slow), from the bytes of
DeepSpeed's own partition tensors (a resident set cannot tell one rank's share of a step's memory apart).

    python benchmarks/memory_estimate.py [--cases NAME,NAME] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

RESULT = "RESULT "


@dataclass(frozen=True)
class Case:
    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    micro_batch: int
    seq: int
    completion: int
    lora: bool
    checkpointing: bool
    lora_r: int = 16
    lora_dropout: float = 0.0
    tied: bool = False


SMALL = {"hidden": 256, "layers": 4, "heads": 4, "kv_heads": 2, "intermediate": 768, "vocab": 8192}
MEDIUM = {"hidden": 512, "layers": 6, "heads": 8, "kv_heads": 2, "intermediate": 1536, "vocab": 16384}
CASES = [
    Case("small-full", **SMALL, micro_batch=2, seq=512, completion=256, lora=False, checkpointing=False),
    Case("small-full-ckpt", **SMALL, micro_batch=2, seq=512, completion=256, lora=False, checkpointing=True),
    Case("small-lora", **SMALL, micro_batch=4, seq=512, completion=256, lora=True, checkpointing=False),
    Case(
        "small-lora-ckpt-drop",
        **SMALL,
        micro_batch=4,
        seq=512,
        completion=256,
        lora=True,
        checkpointing=True,
        lora_dropout=0.05,
    ),
    Case("medium-full", **MEDIUM, micro_batch=1, seq=1024, completion=512, lora=False, checkpointing=False),
    Case("medium-full-ckpt", **MEDIUM, micro_batch=2, seq=1024, completion=512, lora=False, checkpointing=True),
    Case("medium-lora", **MEDIUM, micro_batch=2, seq=1024, completion=512, lora=True, checkpointing=False),
    Case("medium-lora-ckpt-long", **MEDIUM, micro_batch=1, seq=2048, completion=1024, lora=True, checkpointing=True),
]
# --smoke: one case of the small shapes with short sequences, seconds instead of minutes (what the tests run)
SMOKE = Case("smoke-lora-ckpt", **SMALL, micro_batch=1, seq=64, completion=32, lora=True, checkpointing=True)
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def plan_of(case: Case):
    """The estimate's `TrainingPlan` for `case`, read from a recipe config as `seal-hub estimate` reads one (every
    setting the case leaves out takes its field default), so a field the plan gains cannot break this script."""
    import yaml

    from seal_hub.estimate.plan import load_plan

    settings = {
        "model_name_or_path": "random",
        "dtype": "float32",
        "use_peft": case.lora,
        "lora_r": case.lora_r,
        "lora_dropout": case.lora_dropout,
        "lora_target_modules": TARGETS,
        "bf16": False,
        "use_cpu": True,
        "gradient_checkpointing": case.checkpointing,
        "per_device_train_batch_size": case.micro_batch,
        "gradient_accumulation_steps": 1,
        "num_generations": 2,
        "max_context_tokens": case.seq,
        "max_completion_length": case.completion,
        "max_live_episodes": 1,
        "beta": 0.0,
        "use_vllm": False,
        "cast_lm_head_to_fp32": False,
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{case.name}.yaml"
        path.write_text(yaml.safe_dump(settings))
        return load_plan(path)


def estimate_bytes(case: Case) -> float:
    from seal_hub.estimate.parts import all_parts
    from seal_hub.estimate.report import Estimate
    from seal_hub.estimate.shapes import ModelShape

    shape = ModelShape(
        hidden_size=case.hidden,
        intermediate_size=case.intermediate,
        num_layers=case.layers,
        num_heads=case.heads,
        num_kv_heads=case.kv_heads,
        head_dim=case.hidden // case.heads,
        vocab_size=case.vocab,
        tied_embeddings=case.tied,
        qkv_bias=True,
    )
    plan = plan_of(case)
    estimate = Estimate(plan, shape, tuple(all_parts(shape, plan)))
    return estimate.phase_bytes("persistent") + estimate.update_bytes


# ----- the measured side, in a fresh subprocess -----


def _peak_rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def _rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def _build(case: Case):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2Config, Qwen2ForCausalLM
    from trl.trainer.utils import add_fused_lm_head

    config = Qwen2Config(
        vocab_size=case.vocab,
        hidden_size=case.hidden,
        intermediate_size=case.intermediate,
        num_hidden_layers=case.layers,
        num_attention_heads=case.heads,
        num_key_value_heads=case.kv_heads,
        max_position_embeddings=max(case.seq, 64),
        tie_word_embeddings=case.tied,
        attn_implementation="sdpa",
        use_cache=False,
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config)
    add_fused_lm_head(model, outputs=("log_probs", "entropy"))  # as GRPOTrainer does, before PEFT wraps it
    if case.checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if case.lora:
        lora = LoraConfig(r=case.lora_r, lora_alpha=2 * case.lora_r, lora_dropout=case.lora_dropout)
        lora.target_modules = set(TARGETS)
        model = get_peft_model(model, lora)
        if case.checkpointing:
            model.enable_input_require_grads()
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=1e-5, weight_decay=0.01, fused=True)
    for p in params:  # allocate AdamW's moments now: from the second step on they always exist
        p.grad = torch.zeros_like(p)
    lr = optimizer.param_groups[0]["lr"]
    optimizer.param_groups[0]["lr"] = 0.0
    optimizer.step()
    optimizer.param_groups[0]["lr"] = lr
    optimizer.zero_grad(set_to_none=True)
    return model, optimizer


def _step(model, optimizer, case: Case) -> None:
    import torch

    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(0, case.vocab, (case.micro_batch, case.seq), generator=generator)
    mask = torch.ones_like(ids)
    mask[-1, -max(1, case.seq // 8) :] = 0  # a shorter last rollout: the batch is padded, as GRPO's are
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, : case.seq - case.completion] = -100  # only the completion is scored
    out = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
    advantages = torch.randn(case.micro_batch, 1, generator=generator)
    scored = (labels[:, 1:] != -100).float()
    loss = -(out.log_probs * advantages * scored).sum() / scored.sum()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def measure(case: Case) -> int:
    import gc

    warm = Case("warm", 64, 1, 2, 1, 128, 256, 2, 64, 32, case.lora, case.checkpointing)
    model, optimizer = _build(warm)
    _step(model, optimizer, warm)
    del model, optimizer
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := current RSS
    base = _rss()
    model, optimizer = _build(case)
    _step(model, optimizer, case)
    return _peak_rss() - base


def run_case(case: Case) -> int:
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")}
    command = [sys.executable, __file__, "--measure", json.dumps(asdict(case))]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    for line in done.stdout.splitlines():
        if line.startswith(RESULT):
            return int(line[len(RESULT) :])
    tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
    raise SystemExit(f"case {case.name} failed: {tail[0]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=None, help="comma-separated case names (default: all)")
    parser.add_argument("--smoke", action="store_true", help=f"only the case {SMOKE.name}: seconds (the tests' run)")
    parser.add_argument("--measure", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(f"{RESULT}{measure(Case(**json.loads(args.measure)))}", flush=True)
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    chosen = [SMOKE] if args.smoke else [c for c in CASES if args.cases is None or c.name in args.cases.split(",")]
    if not chosen:
        raise SystemExit(f"no case named {args.cases}; cases: {', '.join(c.name for c in CASES)}")
    worst = 1.0
    for case in chosen:
        estimated, measured = estimate_bytes(case), run_case(case)
        if measured <= 0:
            raise SystemExit(f"case {case.name}: the resident set did not grow, nothing to compare the estimate with")
        ratio = estimated / measured
        kind = ("LoRA" if case.lora else "full") + (" + checkpointing" if case.checkpointing else "")
        print(
            f"{case.name:<24} {case.micro_batch} x {case.seq:<5} {kind:<22} "
            f"estimate {estimated / 2**20:7.1f} MiB  measured {measured / 2**20:7.1f} MiB  ratio {ratio:.2f}x",
            flush=True,
        )
        if abs(ratio - 1) > abs(worst - 1):
            worst = ratio
    print(f"memory estimate / measured: {worst:.2f}x")


if __name__ == "__main__":
    main()
