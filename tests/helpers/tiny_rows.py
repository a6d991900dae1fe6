"""The HF engine tests' shared pieces: the tiny causal LM (random weights, built once per module) and
deterministic random token sequences standing in for prompts (test_decode_buckets, test_kv_prefill,
test_rollout_memory, test_shared_prefix_rows)."""

from __future__ import annotations

import random


def tiny_causal_lm(folder):
    """The tiny random model, built into `folder` and loaded as a `transformers` causal LM."""
    from transformers import AutoModelForCausalLM

    from seal_hub.models.tiny import build_tiny_model

    return AutoModelForCausalLM.from_pretrained(build_tiny_model(folder))


def tokens(seed: int, n: int) -> tuple[int, ...]:
    """`n` token ids drawn from `seed` (ids 10-3999: no special tokens)."""
    rng = random.Random(seed)
    return tuple(rng.randrange(10, 4000) for _ in range(n))
