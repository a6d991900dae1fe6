"""A tiny Llama with LoRA on three projections, random adapter weights (so merging changes the weights)."""

from __future__ import annotations

import torch
from peft import LoraConfig, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM


def lora_model(tie_word_embeddings: bool = False, **lora) -> torch.nn.Module:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=97,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=tie_word_embeddings,
    )
    settings = dict(r=4, target_modules=["q_proj", "v_proj", "up_proj"], init_lora_weights=False) | lora
    return get_peft_model(LlamaForCausalLM(config), LoraConfig(**settings))
