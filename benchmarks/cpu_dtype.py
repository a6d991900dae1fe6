"""bf16 against fp32 on this machine's CPU, in the product: the held-out evaluation and a warm-up step.

bf16 halves the bytes a CPU moves per weight, and where the cores have bf16 instructions (AVX512-BF16, AMX) oneDNN
runs its matrix products about twice as fast as fp32. Where they have neither, PyTorch converts on the fly and bf16
is slower. This script measures, on the demo's policy (`--model demo`, SmolLM2-135M-Instruct; `--model tiny` for a
smoke run) and `--tasks` held-out bfcl-single tasks (categories in turn, the demo's protocol):

- the evaluation with the weights in fp32 (the baseline) and cast to bf16 for generation as the product casts them
  (`seal_hub.generation.weights`, `generation_dtype: auto` on such a CPU), and how many tasks' greedy answers
  agree: the same verdict, and the same generated tokens;
- one warm-up step (`--conversations` answer-key conversations, forward and backward, LoRA r 16) in fp32 and under
  bf16 autocast.

It prints the CPU's bf16 features as /proc/cpuinfo lists them, and ends with exactly
`evaluation time, bf16 / fp32: X.XXx` (below 1.00x: bf16 is faster).

    python benchmarks/cpu_dtype.py [--model demo] [--tasks 30] [--conversations 8]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from seal_hub.envs.bfcl_single import BfclSingleSuite  # noqa: E402
from seal_hub.envs.suite import in_turn  # noqa: E402
from seal_hub.evaluation import EvalProtocol  # noqa: E402
from seal_hub.evaluation.harness import evaluate_policy  # noqa: E402
from seal_hub.generation import build_hf_backend  # noqa: E402
from seal_hub.generation.weights import cpu_flags, generation_dtype  # noqa: E402
from seal_hub.interface.snapshot import InterfaceSnapshot  # noqa: E402
from seal_hub.models import PolicyConfig, build_tiny_model, load_policy  # noqa: E402
from seal_hub.models.demo import DEMO_MODEL_ID  # noqa: E402
from seal_hub.rollout import PolicyInfo  # noqa: E402
from seal_hub.training.warmup import warmup_dataset  # noqa: E402

CATEGORIES = ("simple", "multiple", "parallel", "live_simple", "irrelevance")


def cpu_features() -> str:
    found = [f for f in ("avx512_bf16", "amx_bf16", "amx_tile", "avx512f", "avx512_vnni") if f in cpu_flags()]
    return ", ".join(found) or "none of avx512f, avx512_bf16, amx (or no /proc/cpuinfo)"


def evaluation(model, tokenizer, suite, tasks, max_new_tokens: int, dtype: torch.dtype | None):
    backend = build_hf_backend(model, tokenizer)
    protocol = EvalProtocol(max_new_tokens, 4096, max_steps_per_turn=1, max_live_episodes=len(tasks))
    interface = InterfaceSnapshot.null(suite.name)
    start = time.perf_counter()
    with torch.no_grad(), generation_dtype(model, dtype):
        result = evaluate_policy(backend, tokenizer, PolicyInfo("bench"), suite, tasks, protocol, interface)
    return result, time.perf_counter() - start, backend


def warmup_step(model, rows, autocast: bool) -> float:
    from peft import LoraConfig, get_peft_model

    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    lora = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules=targets, task_type="CAUSAL_LM"))
    start = time.perf_counter()
    for row in rows:
        ids, labels = torch.tensor([row["input_ids"]]), torch.tensor([row["labels"]])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = lora(input_ids=ids, labels=labels).loss
        loss.backward()
    seconds = time.perf_counter() - start
    lora.unload()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=["demo", "tiny"], default="demo")
    parser.add_argument("--tasks", type=int, default=30)
    parser.add_argument("--conversations", type=int, default=8)
    parser.add_argument("--max_new_tokens", type=int, default=96)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"CPU bf16 features: {cpu_features()}; {args.threads} threads")
    suite = BfclSingleSuite()
    tasks = in_turn(suite.select(list(suite.split_ids("test"))), args.tasks, CATEGORIES)
    train = in_turn(suite.select(list(suite.split_ids("train"))), args.conversations, CATEGORIES)
    with tempfile.TemporaryDirectory() as tmp:
        name = DEMO_MODEL_ID if args.model == "demo" else str(build_tiny_model(tmp))
        times, runs, warm = {}, {}, {}
        model, tokenizer = load_policy(PolicyConfig(model_name_or_path=name, dtype="float32"))
        model.eval()
        for label, dtype in (("float32", None), ("bfloat16", torch.bfloat16)):
            result, seconds, backend = evaluation(model, tokenizer, suite, tasks, args.max_new_tokens, dtype)
            times[label], runs[label] = seconds, result.trajectories
            prefill, decode = backend.timings["prefill"], backend.timings["forward"]
            print(
                f"evaluation {label:8s}: {len(tasks)} tasks in {seconds:.1f} s (prefill {prefill:.1f} s, decode "
                f"{decode:.1f} s), average {result.scores.average:.1f}"
            )
        rows = list(warmup_dataset(suite, train, tokenizer))
        for autocast in (False, True):
            warm[autocast] = warmup_step(model, rows, autocast)
            label = "bf16 autocast" if autocast else "fp32"
            print(f"warm-up step {label:13s}: {len(rows)} conversations in {warm[autocast]:.1f} s")
    pairs = list(zip(runs["float32"], runs["bfloat16"], strict=True))
    verdicts = sum(a.passed == b.passed for a, b in pairs)
    tokens = sum(a.token_ids == b.token_ids for a, b in pairs)
    print(
        f"tasks agreeing, fp32 and bf16: same verdict {verdicts} of {len(pairs)}, same tokens {tokens} of {len(pairs)}"
    )
    print(f"warm-up step time, bf16 autocast / fp32: {warm[True] / warm[False]:.2f}x")
    print(f"evaluation time, bf16 / fp32: {times['bfloat16'] / times['float32']:.2f}x")


if __name__ == "__main__":
    main()
