"""A GPU check in one command: random-weight Qwen2.5-3B and Qwen2.5-7B, training steps, rollout speed, memory.

    python benchmarks/gpu_check.py              # one CUDA GPU (meant to fit 10 minutes on one H200)
    python benchmarks/gpu_check.py --dry-run    # CPU, tiny shapes, the same code path (what the tests run)

No network and no downloaded weights: each model is built from its architecture's public config (the
``config.json`` values of Qwen/Qwen2.5-3B-Instruct and Qwen/Qwen2.5-7B-Instruct, shipped in the package's
``seal_hub/estimate/data/backbones.json`` with the memory estimate's shapes) with random
bf16 weights allocated directly on the GPU. For each model it measures, with the GPU's peak allocated memory
(`torch.cuda.max_memory_allocated`, reset before each part, so it includes the weights):

- SEAL step, bf16 LoRA: one optimizer step of the real `SealTrainer` (batched-HF rollouts of BFCL tasks with the
  tool-call parser, verifier, diagnosis, rho update, interface evolution, records, then TRL's GRPO update), with
  the LoRA settings of `recipes/configs/qwen2.5-*-lora.yaml`. It needs TRL, datasets and bfcl-eval; the
  tokenizer is the tiny BFCL-trained one (`seal_hub.models.tiny`), since the Qwen tokenizer would be a download;
  its ids all lie inside Qwen's vocabulary, and a BFCL prompt comes to about 4.4k of its tokens;
- LoRA step (plain PEFT): one forward/backward/AdamW step of a PEFT LoRA model on random token ids, the loss a
  policy-gradient one over the completion's log-probabilities: what the SEAL step's update does, without TRL;
  it runs everywhere, so it is the figure to compare the QLoRA step with;
- rollout tokens/s of the batched backend the trainer generates with (`seal_hub.generation.hf.HFBackend`)
  at 16 and 64 live episodes: groups of 8 episodes share a random prompt, and each episode takes a few model
  steps with random "environment" tokens appended between them, so the prefix sharing, the per-episode KV cache
  and the row re-layout between steps all run; sampled at temperature 1.0. Tokens/s counts sampled tokens over
  the whole rollout, prefill included. Parsing and stepping BFCL are not included (they run on the CPU and the
  SEAL step covers them);
- for Qwen2.5-7B, the QLoRA step: the same plain-PEFT step with every decoder linear layer in 4-bit NF4 (double
  quantisation, as `recipes/configs/qwen2.5-7b-qlora.yaml`) through bitsandbytes' `Linear4bit`, the LoRA weights
  in bf16 as TRL keeps them for QLoRA;
- once, for the first architecture, vLLM server mode (`gpu_check_server.py`): SEAL's HTTP rollout client against
  a real `vllm serve` it starts on a 4-layer random model, tokens/s, prefix-cache share, log-probs against HF's.
  Where vLLM is absent it is skipped as optional: `--require` does not fail for it.

It runs where only torch, transformers, peft and accelerate are installed (the batched backend imports without
the engine's dependencies); what it cannot run it reports as skipped, naming the missing package, and a part
that fails is reported as failed (exit status 1) without stopping the others. `--time-budget` skips the parts
that would start after that many seconds. `--require` makes a skipped part (a missing package or the spent
budget) count against the run as a failed one does: exit status 1. It prints one table at the end; its last line
is always ``gpu check: K of M parts passed`` (a skipped part is not a passed one, with or without `--require`).

On a lent GPU machine that lacks TRL, datasets, bfcl-eval or bitsandbytes, `benchmarks/gpu_bundle.py` carries
them as wheels and `benchmarks/gpu_run.sh` installs them and runs this check with `--require` (docs/benchmarks.md, "The
GPU check on a lent GPU machine"). The check runs under that machine's transformers 5.17 as under 5.23: the one API
it calls that differs is the models' checkpointing switch, looked up under both names in `lora_step`.

Not covered: colocated vLLM generation, TRL's weight transfer into a server, multi-GPU, the Qwen tokenizer,
anything about learning (the weights are random).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
if importlib.util.find_spec("seal_hub") is None:  # run from a checkout without installing it
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402  (transformers, peft and seal_hub are imported where used: `--help` answers at once)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_check_server as server  # noqa: E402  (the vLLM server-mode part, a module of its own)

# the checked architectures: their config.json fields ship with the package (seal_hub/estimate/data/backbones.json,
# read as a file so that no seal_hub module, and none of TRL or datasets, is imported for them)
QWEN25 = {"Qwen2.5-3B": "Qwen/Qwen2.5-3B-Instruct", "Qwen2.5-7B": "Qwen/Qwen2.5-7B-Instruct"}
# the dry run's stand-in: same architecture and code path, tiny sizes (vocabulary above the tiny tokenizer's ids)
DRY_SIZES = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 4160,
    "bos_token_id": 1,
    "eos_token_id": 2,
}
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


@dataclass(frozen=True)
class Sizes:
    """How big each part is; `FULL` on a GPU, `DRY` for the CPU dry run."""

    seal_generations: int  # rollouts of the one task of the SEAL step (its whole batch)
    seal_new_tokens: int  # tokens per model step in the SEAL step's rollouts
    seal_episode_steps: int  # model steps per episode in the SEAL step (the paper's cap is 20)
    seal_completion: int  # max_completion_length: trained tokens after the prompt
    train_batch: int  # sequences in the plain LoRA / QLoRA step
    train_prompt: int  # their prompt tokens (no loss)
    train_completion: int  # their completion tokens (policy-gradient loss)
    rollout_prompt: int  # shared prompt of a rollout group
    rollout_group: int  # episodes per group (GRPO's num_generations)
    rollout_steps: int  # model steps per episode
    rollout_new_tokens: int  # tokens per model step
    rollout_env_tokens: int  # tokens the "environment" appends between steps


FULL = Sizes(8, 128, 4, 2048, 8, 2048, 2048, 3072, 8, 3, 128, 64)
DRY = Sizes(2, 8, 2, 128, 2, 32, 32, 32, 4, 2, 4, 4)


@dataclass(frozen=True)
class Row:
    part: str
    model: str
    result: str
    peak: str = "-"
    status: str = "passed"  # "passed", "skipped", "optional" (skipped, and not required) or "failed"


class Check:
    """Runs the parts, each guarded: a missing package or an error becomes a row, the next part still runs."""

    def __init__(
        self, device: str, dtype: torch.dtype, sizes: Sizes, budget: float, dry: bool, require: bool = False
    ) -> None:
        self.device, self.dtype, self.sizes, self.budget, self.dry = device, dtype, sizes, budget, dry
        self.require = require  # a skipped part fails the run
        self.rows: list[Row] = []
        self.started = time.perf_counter()

    @property
    def failed(self) -> bool:
        """Whether the exit status is 1: a part failed, or (with `require`) a part was skipped."""
        failing = {"failed", "skipped"} if self.require else {"failed"}
        return any(row.status in failing for row in self.rows)

    def summary(self) -> str:
        """The run's last line."""
        passed = sum(row.status == "passed" for row in self.rows)
        return f"gpu check: {passed} of {len(self.rows)} parts passed"

    def skip_optional(self, name: str, model: str, reason: str) -> None:
        """A part that is skipped here and that `--require` does not ask for (vLLM, which no bundle carries)."""
        self.rows.append(Row(name, model, f"skipped: {reason}", status="optional"))

    def part(self, name: str, model: str, run: Callable[..., str], *args, **kwargs) -> None:
        """Run `run(*args, **kwargs)` (which returns the result cell) as one row of the table."""
        elapsed = time.perf_counter() - self.started
        if elapsed > self.budget:
            self.rows.append(Row(name, model, f"skipped: time budget ({self.budget:.0f} s) spent", status="skipped"))
            return
        reset_peak(self.device)
        try:
            result = run(*args, **kwargs)
        except SkipPart as skip:
            self.rows.append(Row(name, model, f"skipped: {skip}", status="skipped"))
            return
        except Exception as error:  # a GPU check reports every part; the traceback would hide the table
            message = " ".join(str(error).split())[:160]
            self.rows.append(Row(name, model, f"FAILED: {type(error).__name__}: {message}", status="failed"))
            return
        finally:
            free(self.device)
        self.rows.append(Row(name, model, result, peak_memory(self.device)))

    def table(self) -> str:
        header = Row("part", "model", "result", "peak GPU memory")
        widths = [max(len(getattr(r, f)) for r in [header, *self.rows]) for f in ("part", "model", "result", "peak")]
        lines = []
        for i, row in enumerate([header, *self.rows]):
            cells = (row.part, row.model, row.result, row.peak)
            lines.append("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip())
            if i == 0:
                lines.append("  ".join("-" * w for w in widths))
        return "\n".join(lines)


class SkipPart(Exception):
    """A part that cannot run here (a package is missing); its message says which."""


def reset_peak(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def peak_memory(device: str) -> str:
    if device != "cuda":
        return "- (CPU)"
    return f"{torch.cuda.max_memory_allocated() / 2**30:.1f} GiB"


def free(device: str) -> None:
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def model_config(name: str, dry: bool):
    from transformers import Qwen2Config

    package = Path(importlib.util.find_spec("seal_hub").origin).parent
    entry = json.loads((package / "estimate" / "data" / "backbones.json").read_text())[QWEN25[name]]
    values = {k: v for k, v in entry.items() if k not in ("source", "torch_dtype")}
    return Qwen2Config.from_dict(dict(values, **(DRY_SIZES if dry else {})))


def build_model(name: str, check: Check):
    """Random weights in the check's dtype, allocated on its device (no CPU copy of a 7B model)."""
    from transformers import AutoModelForCausalLM

    with torch.device(check.device):
        return AutoModelForCausalLM.from_config(
            model_config(name, check.dry), dtype=check.dtype, attn_implementation="sdpa"
        )


def missing(*packages: str) -> list[str]:
    """The packages of `packages` that cannot be imported here."""
    absent = []
    for package in packages:
        try:
            importlib.import_module(package)
        except ImportError:
            absent.append(package)
    return absent


# ----- the parts -----


def seal_step(name: str, check: Check) -> str:
    """One optimizer step of `SealTrainer` with bf16 LoRA on a random model of `name`'s architecture."""
    absent = missing("trl", "datasets", "bfcl_eval")
    if absent:
        raise SkipPart(f"needs {', '.join(absent)} (not installed); the plain LoRA step below still runs")
    from peft import LoraConfig
    from transformers import TrainerCallback

    from seal_hub.envs.bfcl import BfclSuite
    from seal_hub.models.tiny import train_tokenizer
    from seal_hub.training import SealConfig, SealTrainer

    class StepTimer(TrainerCallback):
        seconds = 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            sync(check.device)
            self.seconds = time.perf_counter() - self.start

    sizes = check.sizes
    suite = BfclSuite()
    task = next(iter(suite.tasks.values()))
    tokenizer = train_tokenizer()
    model = build_model(name, check)
    timer = StepTimer()
    with tempfile.TemporaryDirectory() as out:
        args = SealConfig(
            output_dir=out,
            per_device_train_batch_size=sizes.seal_generations,
            num_generations=sizes.seal_generations,
            max_steps=1,
            learning_rate=1e-5,
            beta=0.001,
            loss_type="dapo",
            bf16=check.dtype == torch.bfloat16,
            use_cpu=check.device == "cpu",
            gradient_checkpointing=True,
            seed=0,
            report_to=[],
            save_strategy="no",
            logging_steps=1,
            disable_tqdm=True,
            max_new_tokens=sizes.seal_new_tokens,
            max_steps_per_episode=sizes.seal_episode_steps,
            max_completion_length=sizes.seal_completion,
            max_context_tokens=12288,
            max_live_episodes=sizes.seal_generations,
            interface_mode="released",
        )
        lora = LoraConfig(r=64, lora_alpha=128, lora_dropout=0.05, target_modules=LORA_TARGETS, task_type="CAUSAL_LM")
        trainer = SealTrainer(
            model,
            args=args,
            processing_class=tokenizer,
            callbacks=[timer],
            peft_config=lora,
            suite=suite,
            train_tasks=[task],
            policy_id=name,
        )
        reset_peak(check.device)  # the step's peak: weights, LoRA, rollouts' KV, the update
        trainer.train()
        del trainer, model
    return f"{timer.seconds:.1f} s/step ({sizes.seal_generations} rollouts of 1 BFCL task)"


def lora_step(name: str, check: Check, quantized: bool = False) -> str:
    """One forward/backward/AdamW step of PEFT LoRA, bf16 (or 4-bit NF4 base weights), on random token ids."""
    from peft import LoraConfig, get_peft_model

    if quantized:
        absent = missing("bitsandbytes")
        if absent:
            raise SkipPart("needs bitsandbytes (not installed)")
    sizes = check.sizes
    model = build_model(name, check)
    if quantized:
        quantize_nf4(model, check)
    model.config.use_cache = False
    # transformers 5.23 renamed it; older 5.x releases only have the gradient_ name
    enable = getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable
    enable({"use_reentrant": False})
    lora = LoraConfig(r=64, lora_alpha=128, lora_dropout=0.05, target_modules=LORA_TARGETS, task_type="CAUSAL_LM")
    model = get_peft_model(model, lora)
    if quantized:  # TRL keeps QLoRA's adapter weights in bf16 (the QLoRA paper's recommendation)
        for param in model.parameters():
            if param.requires_grad:
                param.data = param.data.to(check.dtype)
    model.enable_input_require_grads()
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=1e-5, weight_decay=0.01)
    generator = torch.Generator().manual_seed(0)
    vocab = model.config.vocab_size
    length = sizes.train_prompt + sizes.train_completion
    ids = torch.randint(0, vocab, (sizes.train_batch, length), generator=generator).to(check.device)
    advantages = torch.randn(sizes.train_batch, generator=generator).to(check.device)
    reset_peak(check.device)
    start = time.perf_counter()
    keep = sizes.train_completion + 1
    logits = model(input_ids=ids, logits_to_keep=keep).logits[:, :-1]  # predicts the completion's tokens
    targets = ids[:, -sizes.train_completion :]
    logps = torch.stack(
        [
            torch.log_softmax(row.float(), dim=-1).gather(-1, target[:, None]).squeeze(-1)
            for row, target in zip(logits, targets, strict=True)
        ]
    )
    loss = -(logps * advantages[:, None]).mean()  # a policy-gradient loss, token mean
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    sync(check.device)
    seconds = time.perf_counter() - start
    if not math.isfinite(loss.item()):
        raise RuntimeError(f"the loss is {loss.item()}")
    del model, optimizer, logits, logps, loss
    return f"{seconds:.1f} s/step ({sizes.train_batch} x {length} tokens, loss on the last {sizes.train_completion})"


def quantize_nf4(model, check: Check) -> None:
    """Every linear layer of the decoder (not the output head) becomes bitsandbytes' 4-bit NF4 `Linear4bit`."""
    import bitsandbytes as bnb

    for layer in model.model.layers:
        for parent in layer.modules():
            for child_name, child in list(parent.named_children()):
                if not isinstance(child, torch.nn.Linear):
                    continue
                quantized = bnb.nn.Linear4bit(
                    child.in_features,
                    child.out_features,
                    bias=child.bias is not None,
                    compute_dtype=check.dtype,
                    quant_type="nf4",
                    compress_statistics=True,  # double quantisation (use_bnb_nested_quant)
                    device="meta",
                )
                quantized.weight = bnb.nn.Params4bit(
                    child.weight.data, requires_grad=False, quant_type="nf4", compress_statistics=True
                )
                if child.bias is not None:
                    quantized.bias = torch.nn.Parameter(child.bias.data, requires_grad=False)
                setattr(parent, child_name, quantized.to(check.device))  # quantises on the way
                del child
        free(check.device)


def rollout(name: str, check: Check, live: int, model_holder: dict) -> str:
    """Tokens/s of `HFBackend` with `live` episodes in flight (groups sharing a prompt, several model steps)."""
    from seal_hub.generation.backend import GenerationRequest, SamplingConfig
    from seal_hub.generation.hf import HFBackend

    sizes = check.sizes
    if "model" not in model_holder:
        model_holder["model"] = build_model(name, check).eval()
    model = model_holder["model"]
    config = model.config
    eos = [int(config.eos_token_id)]
    vocab = min(config.vocab_size, 150_000)  # ordinary tokens, below Qwen's special ones
    generator = torch.Generator().manual_seed(live)
    backend = HFBackend(model, eos, pad_token_id=0, seed=0)
    warm = [GenerationRequest("warm-up", tuple(range(1, 9)), 8, 4)]
    backend.generate(warm, SamplingConfig(temperature=1.0, max_new_tokens=4))
    backend.release("warm-up")
    sequences: dict[str, list[int]] = {}
    for group in range(math.ceil(live / sizes.rollout_group)):
        prompt = torch.randint(0, vocab, (sizes.rollout_prompt,), generator=generator).tolist()
        for member in range(sizes.rollout_group):
            if len(sequences) < live:
                sequences[f"{group}#{member}"] = list(prompt)
    sampling = SamplingConfig(temperature=1.0, max_new_tokens=sizes.rollout_new_tokens, seed=0)
    sync(check.device)
    start = time.perf_counter()
    generated = 0
    for step in range(sizes.rollout_steps):
        requests = [GenerationRequest(s, tuple(ids), sizes.rollout_prompt) for s, ids in sequences.items()]
        outputs = backend.generate(requests, sampling)
        for (session, ids), output in zip(sequences.items(), outputs, strict=True):
            generated += len(output.token_ids)
            ids.extend(output.token_ids)
            if step + 1 < sizes.rollout_steps:
                ids.extend(torch.randint(0, vocab, (sizes.rollout_env_tokens,), generator=generator).tolist())
            else:
                backend.release(session)
    sync(check.device)
    seconds = time.perf_counter() - start
    return (
        f"{generated / seconds:.0f} tokens/s ({generated} tokens in {seconds:.1f} s; {sizes.rollout_steps} steps "
        f"x {sizes.rollout_new_tokens} tokens, prompts {sizes.rollout_prompt})"
    )


def server_mode(name: str, check: Check) -> None:
    """The vLLM server-mode part (`gpu_check_server.py`), once, for the first checked architecture."""
    from local_server import vllm_python

    part = "vLLM server mode, fp32"
    model = name if check.dry else f"{name} ({server.SERVER_LAYERS} layers)"
    python = vllm_python()
    if python is None:
        reason = "needs vllm (not installed here, nor SEAL_VLLM_PYTHON); optional, --require does not ask for it"
        check.skip_optional(part, model, reason)
        return
    check.part(part, model, server.server_part, model_config(name, check.dry), check, python)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="One-command GPU check of seal_hub: random-weight Qwen2.5-3B/7B, a SEAL step with bf16 LoRA, "
        "a plain LoRA and a QLoRA step, rollout tokens/s at 16 and 64 live episodes, peak GPU memory."
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="CPU, tiny shapes, same code path (for tests; no GPU needed)"
    )
    parser.add_argument(
        "--models", nargs="+", choices=list(QWEN25), default=list(QWEN25), help="architectures to check"
    )
    parser.add_argument(
        "--time-budget", type=float, default=540.0, help="seconds after which parts not yet started are skipped"
    )
    parser.add_argument(
        "--require",
        action="store_true",
        help="a skipped part (missing package or spent time budget) fails the run (exit status 1)",
    )
    args = parser.parse_args(argv)
    if not args.dry_run and not torch.cuda.is_available():
        print("gpu_check: no CUDA GPU here (torch.cuda.is_available() is False); use --dry-run", file=sys.stderr)
        return 2
    device, dtype, sizes = ("cpu", torch.float32, DRY) if args.dry_run else ("cuda", torch.bfloat16, FULL)
    check = Check(device, dtype, sizes, args.time_budget, args.dry_run, require=args.require)
    where = "CPU dry run, tiny shapes" if args.dry_run else torch.cuda.get_device_name()
    import peft
    import transformers

    absent = [p for p in ("trl", "datasets", "bfcl_eval", "bitsandbytes") if importlib.util.find_spec(p) is None]
    print(
        f"gpu_check on {where}: torch {torch.__version__}, transformers {transformers.__version__}, "
        f"peft {peft.__version__}; absent: {', '.join(absent) or 'none'}"
    )
    precision = "bf16" if dtype == torch.bfloat16 else "fp32"
    for name in args.models:
        check.part(f"SEAL step, LoRA {precision}", name, seal_step, name, check)
        check.part(f"LoRA step (plain PEFT), {precision}", name, lora_step, name, check)
        holder: dict = {}  # the rollout parts share one model
        for live in (16, 64):
            check.part(f"rollout, {live} live episodes", name, rollout, name, check, live, holder)
        holder.clear()
        free(device)
        if name == "Qwen2.5-7B":
            check.part("QLoRA step (plain PEFT), 4-bit NF4", name, lora_step, name, check, quantized=True)
    server_mode(args.models[0], check)
    print(check.table())
    print(f"total {time.perf_counter() - check.started:.0f} s")
    print(check.summary(), flush=True)
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
