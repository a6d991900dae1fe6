"""LoRA merged for generation: the same logits, the exact weights back afterwards, nothing merged it cannot hold."""

from __future__ import annotations

import pytest
import torch
from helpers.lora import lora_model
from transformers import LlamaConfig, LlamaForCausalLM

from seal_hub.generation.weights import merged_lora


def test_merged_generation_has_the_unmerged_logits_and_leaves_every_weight_as_it_was():
    model = lora_model()
    tokens = torch.randint(0, 97, (2, 9))
    with torch.no_grad():
        unmerged = model(tokens).logits
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    with merged_lora(model) as count, torch.no_grad():
        merged = model(tokens).logits
        assert all(layer.merged for layer in model.modules() if hasattr(layer, "merged_adapters"))
    assert count == 6  # q, v and up projections of 2 layers
    assert torch.allclose(merged, unmerged, atol=1e-5)
    assert all(torch.equal(before[name], p) for name, p in model.named_parameters())  # bit for bit
    assert not any(layer.merged for layer in model.modules() if hasattr(layer, "merged_adapters"))
    with torch.no_grad():
        assert torch.equal(model(tokens).logits, unmerged)  # the LoRA path runs again


def test_an_error_inside_still_puts_the_weights_back_and_disabled_merges_nothing():
    model = lora_model()
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    with pytest.raises(RuntimeError, match="inside"), merged_lora(model):
        raise RuntimeError("inside")
    assert all(torch.equal(before[name], p) for name, p in model.named_parameters())
    with merged_lora(model, enabled=False) as count:
        assert count == 0
    with merged_lora(lora_model(use_dora=True)) as count:
        assert count == 0  # a LoRA variant computes more than B A: left alone
    plain = LlamaForCausalLM(LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=1))
    with merged_lora(plain) as count:
        assert count == 0
