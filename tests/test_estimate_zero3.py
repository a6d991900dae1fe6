"""The estimate's ZeRO-3 parts: every partition (LoRA's too) is 1/world, and the parameters DeepSpeed keeps
whole on every rank (at most `ZERO3_PERSISTENCE_THRESHOLD` elements each) are a part of their own. Measured
against a real two-process ZeRO-3 run in tests/test_deepspeed.py (slow)."""

from __future__ import annotations

import dataclasses

from helpers.paths import RECIPE_CONFIGS as CONFIGS

from seal_hub.estimate.parts import ZERO3_PERSISTENCE_THRESHOLD, lora_params, trainable, weights
from seal_hub.estimate.plan import LaunchPlan, load_plan
from seal_hub.estimate.shapes import ModelShape

# the tiny test policy's shape (seal_hub.models.tiny): every layer's tensors are small, the embedding is not
TINY = ModelShape(64, 128, 2, 4, 2, 16, 4160, tied_embeddings=True, qkv_bias=True)


def zero3(world: int, **changes):
    plan = load_plan(CONFIGS / "qwen2.5-3b-lora.yaml")
    changes = {"dtype": "float32", "lora_r": 8, "lora_target_modules": ("q_proj", "v_proj")} | changes
    return dataclasses.replace(plan, launch=LaunchPlan(num_processes=world, zero_stage=3), **changes)


def test_zero3_shards_lora_parameters_like_the_rest():
    plan = zero3(2)
    parts = {p.name: p.bytes for p in trainable(TINY, plan)}
    assert parts["LoRA parameters"] == lora_params(TINY, plan) * 4 / 2
    single = dataclasses.replace(plan, launch=LaunchPlan())
    assert {p.name: p.bytes for p in trainable(TINY, single)}["LoRA parameters"] == lora_params(TINY, plan) * 4


def test_zero3_persistent_params_are_the_small_tensors_whole():
    parts = {p.name: p.bytes for p in weights(TINY, zero3(2))}
    layer = 2 * 64 + 64 + 2 * 32 + sum(a * b for a, b in TINY.linear_shapes().values())
    assert TINY.embedding_params > ZERO3_PERSISTENCE_THRESHOLD
    lora = 2 * 8 * (64 + 64 + 64 + 32)  # q_proj and v_proj: A (r x in) and B (out x r) per layer
    assert parts["ZeRO-3 persistent params"] == (2 * layer + 64 + lora) * 4
    full = {p.name: p.bytes for p in weights(TINY, zero3(2, use_peft=False))}
    assert full["ZeRO-3 persistent params"] == (2 * layer + 64) * 4
    assert "ZeRO-3 persistent params" not in {p.name for p in weights(TINY, zero3(1))}
