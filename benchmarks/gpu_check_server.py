"""The GPU check's vLLM server-mode part: SEAL's HTTP rollout client against a real `vllm serve` it starts.

A random-weight model of the checked architecture (4 decoder layers on a GPU, so that it saves, loads and starts in
well under a minute; the tiny dry-run shapes with head dim 64 on a CPU, which vLLM's CPU attention needs) is saved
with the tiny BFCL-trained tokenizer and served on loopback in fp32 with prefix caching and processed log-probs.
Groups of episodes that share a prompt run several greedy steps through `VLLMServerBackend`, random "environment"
tokens appended between steps, as the rollout part does. It reports tokens/s over HTTP, the share of prompt tokens
the server found in its prefix cache, and the largest gap between a sampled token's log-prob from the server and the
HF model's, teacher-forced on the same device in fp32 (the part fails above `TOLERANCE`). The dry run's 32-token
prompts fill no cache block of the CPU backend (128 tokens), so its prefix-cache share reads 0%.

Where vLLM is not importable (the lent GPU machines have none, and it does not fit in a wheel bundle) the part is
skipped as optional: `--require` does not fail the run for it. `SEAL_VLLM_PYTHON` names another Python that has
vLLM (the dry run's tests point it at the CPU build's virtualenv). Not run: TRL's NCCL weight transfer into the
server, which needs the trainer and the server on different GPUs (NCCL does not put two ranks on one device).
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path

import torch

SERVER_LAYERS = 4  # decoder layers of the served random model on a GPU
TOLERANCE = 2e-3  # two fp32 engines on one device (different attention kernels), as tests/test_vllm_backend.py
LIVE = 16  # episodes in flight


def served_config(config, dry: bool):
    if dry:  # head dim 64 for vLLM's CPU attention; a vocabulary beyond the tokenizer's, as Qwen's is
        config.hidden_size, config.intermediate_size, config.vocab_size = 256, 512, 8192
    else:
        config.num_hidden_layers = SERVER_LAYERS
        config.layer_types = config.layer_types[:SERVER_LAYERS] if getattr(config, "layer_types", None) else None
    return config


def server_part(config, check, python: Path) -> str:
    from local_server import prefix_cache_counters, vllm_server
    from transformers import AutoModelForCausalLM

    from seal_hub.generation.backend import GenerationRequest, SamplingConfig
    from seal_hub.generation.vllm_server import VLLMServerBackend
    from seal_hub.models.tiny import train_tokenizer

    sizes, device = check.sizes, check.device
    config = served_config(config, check.dry)
    tokenizer = train_tokenizer()
    eos = [int(config.eos_token_id)]
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32, attn_implementation="sdpa").eval()
    flags = ["--dtype", "float32", "--max-model-len", "8192", "--enforce-eager"]
    flags += ["--gpu-memory-utilization", "0.1" if device == "cpu" else "0.3"]
    env = {"VLLM_CPU_KVCACHE_SPACE": "1"} if device == "cpu" else {}
    generator = torch.Generator().manual_seed(0)
    vocab = len(tokenizer)  # prompt and environment tokens the tokenizer knows
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(Path(tmp) / "model")
        tokenizer.save_pretrained(Path(tmp) / "model")
        started = time.perf_counter()
        with vllm_server(python, Path(tmp) / "model", Path(tmp) / "server.log", flags, env) as url:
            start_seconds = time.perf_counter() - started
            backend = VLLMServerBackend(url, eos)
            sequences: dict[str, list[int]] = {}
            masks: dict[str, list[int]] = {}
            for group in range(math.ceil(LIVE / sizes.rollout_group)):
                prompt = torch.randint(0, vocab, (sizes.rollout_prompt,), generator=generator).tolist()
                for member in range(sizes.rollout_group):
                    sequences[f"{group}#{member}"], masks[f"{group}#{member}"] = list(prompt), [0] * len(prompt)
            sampling = SamplingConfig(temperature=0, max_new_tokens=sizes.rollout_new_tokens)
            logprobs: dict[str, list[float]] = {session: [] for session in sequences}
            queried0, hits0 = prefix_cache_counters(url)
            clock = time.perf_counter()
            generated = 0
            for step in range(sizes.rollout_steps):
                requests = [GenerationRequest(s, tuple(ids), sizes.rollout_prompt) for s, ids in sequences.items()]
                outputs = backend.generate(requests, sampling)
                for (session, ids), output in zip(sequences.items(), outputs, strict=True):
                    generated += len(output.token_ids)
                    ids.extend(output.token_ids)
                    masks[session].extend([1] * len(output.token_ids))
                    logprobs[session].extend(output.logprobs)
                    if step + 1 < sizes.rollout_steps:
                        env_ids = torch.randint(0, vocab, (sizes.rollout_env_tokens,), generator=generator).tolist()
                        ids.extend(env_ids)
                        masks[session].extend([0] * len(env_ids))
            seconds = time.perf_counter() - clock
            queried1, hits1 = prefix_cache_counters(url)
            backend.close()
    gap = 0.0
    for session, ids in sequences.items():
        with torch.no_grad():
            scores = model(input_ids=torch.tensor([ids], device=device)).logits[0].float().log_softmax(-1)
        sampled = [i for i, m in enumerate(masks[session]) if m]
        ours = torch.tensor([float(scores[i - 1, ids[i]]) for i in sampled])
        gap = max(gap, float((ours - torch.tensor(logprobs[session])).abs().max()))
    del model
    if gap > TOLERANCE:
        raise AssertionError(f"server log-probs differ from the HF model's by up to {gap:.1e} (> {TOLERANCE})")
    cached = (hits1 - hits0) / max(queried1 - queried0, 1)
    return (
        f"{generated / seconds:.0f} tokens/s over HTTP ({LIVE} episodes x {sizes.rollout_steps} steps, greedy); "
        f"prefix cache {cached:.0%} of prompt tokens; max |d logprob| vs HF {gap:.1e}; started in "
        f"{start_seconds:.0f} s; weight sync not run (needs a second GPU)"
    )
