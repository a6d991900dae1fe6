"""Generation in bf16 with fp32 training weights: the forward runs in bf16, every weight comes back bit for bit."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from helpers.lora import lora_model as shared_lora_model

from seal_hub.generation import GenerationRequest, HFBackend, SamplingConfig
from seal_hub.generation import weights as gd
from seal_hub.generation.weights import (
    AS_LOADED,
    GenerationWeights,
    backend_for,
    generation_dtype,
    merged_lora,
    resolve_generation_dtype,
    with_generation_dtype,
)


def lora_model() -> torch.nn.Module:
    return shared_lora_model(tie_word_embeddings=True)  # a tied weight is one parameter: cast once


def test_bf16_generation_runs_in_bf16_close_to_fp32_and_gives_every_weight_back():
    model = lora_model()
    tokens = torch.randint(0, 97, (2, 9))
    with torch.no_grad():
        reference = model(tokens, use_cache=True)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    with merged_lora(model), generation_dtype(model, torch.bfloat16) as count, torch.no_grad():
        out = model(tokens, use_cache=True)
        assert all(p.dtype == torch.bfloat16 for p in model.parameters())
    assert count == len(list(model.parameters()))  # the tied embedding once
    assert out.logits.dtype == torch.bfloat16
    assert out.past_key_values.layers[0].keys.dtype == torch.bfloat16  # the KV cache too
    assert torch.allclose(out.logits.float(), reference.logits, atol=0.1)
    assert all(torch.equal(before[name], p) and p.dtype == torch.float32 for name, p in model.named_parameters())
    with torch.no_grad():
        assert torch.equal(model(tokens).logits, reference.logits)


def test_an_error_inside_puts_the_weights_back_and_none_casts_nothing():
    model = lora_model()
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    with pytest.raises(RuntimeError, match="inside"), generation_dtype(model, torch.bfloat16):
        raise RuntimeError("inside")
    assert all(torch.equal(before[name], p) for name, p in model.named_parameters())
    with generation_dtype(model, None) as count:
        assert count == 0


def test_auto_takes_bf16_only_on_a_cpu_with_bf16_instructions(monkeypatch):
    model = lora_model()
    monkeypatch.setattr(gd, "cpu_flags", lambda: frozenset({"avx512f", "avx512_bf16"}))
    assert resolve_generation_dtype("auto", model) == torch.bfloat16
    assert resolve_generation_dtype(None, model) == torch.bfloat16
    assert resolve_generation_dtype("float32", model) is None  # the policy's own dtype already
    monkeypatch.setattr(gd, "cpu_flags", lambda: frozenset({"avx2"}))
    assert resolve_generation_dtype("auto", model) is None
    assert resolve_generation_dtype("bfloat16", model) == torch.bfloat16  # asked for: given
    assert resolve_generation_dtype("auto", model.to(torch.bfloat16)) is None
    with pytest.raises(ValueError, match="generation_dtype must be one of"):
        resolve_generation_dtype("fp8", model)


def test_generation_weights_merge_then_cast_and_name_the_dtype_in_the_record():
    model = lora_model()
    tokens = torch.randint(0, 97, (1, 7))
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    with GenerationWeights(merge_lora=True, dtype="bfloat16").applied(model) as dtype, torch.no_grad():
        assert dtype == torch.bfloat16
        assert all(layer.merged for layer in model.modules() if hasattr(layer, "merged_adapters"))
        assert model(tokens).logits.dtype == torch.bfloat16
    assert all(torch.equal(before[name], p) for name, p in model.named_parameters())
    assert not any(layer.merged for layer in model.modules() if hasattr(layer, "merged_adapters"))
    with AS_LOADED.applied(model) as dtype:
        assert dtype is None
    assert with_generation_dtype({"id": "m"}, torch.bfloat16) == {"id": "m", "generation_dtype": "bfloat16"}
    assert with_generation_dtype({"id": "m"}, None) == {"id": "m"}
    with pytest.raises(ValueError, match="generation_dtype must be one of"):
        GenerationWeights(dtype="half")


def test_backend_for_generates_from_the_weights_as_applied_and_puts_them_back():
    """The one door training, the held-out comparison and `seal-hub eval` generate through: the HF engine on the
    weights merged and cast, or a given factory's backend; the weights back afterwards."""
    model = lora_model()
    tokenizer = SimpleNamespace(eos_token_id=None, pad_token_id=None)  # the model's generation config ends turns
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    weights = GenerationWeights(merge_lora=True, dtype="bfloat16")
    with backend_for(model, tokenizer, weights, seed=3) as (backend, dtype):
        assert isinstance(backend, HFBackend) and backend.seed == 3
        assert dtype == torch.bfloat16 and all(p.dtype == torch.bfloat16 for p in model.parameters())
        request = GenerationRequest("s", (5, 11, 17), max_new_tokens=4)
        [generation] = backend.generate([request], SamplingConfig(temperature=0.0))
        assert 1 <= len(generation.token_ids) <= 4
    assert all(torch.equal(before[name], p) for name, p in model.named_parameters())
    with backend_for(model, tokenizer, factory=lambda policy, tokens: ("double", policy, tokens)) as (backend, dtype):
        assert backend == ("double", model, tokenizer) and dtype is None


def test_bf16_training_on_a_cpu_needs_its_bf16_instructions(monkeypatch, tmp_path):
    """bf16 autocast for the loss on a CPU with AMX or AVX512-BF16 (benchmarks/demo_step.py --compare bf16 times it);
    on one without, the config refuses it in one line instead of converting every product slowly."""
    from seal_hub.training import SealConfig

    if torch.cuda.is_available():
        pytest.skip("a GPU takes bf16 whatever the CPU")
    monkeypatch.setattr(gd, "cpu_flags", lambda: frozenset({"avx512f", "amx_bf16"}))
    assert SealConfig(output_dir=str(tmp_path), bf16=True, use_cpu=True).bf16 is True
    monkeypatch.setattr(gd, "cpu_flags", lambda: frozenset({"avx2"}))
    with pytest.raises(ValueError, match="bf16=True needs a GPU or a CPU with bf16 instructions"):
        SealConfig(output_dir=str(tmp_path), bf16=True, use_cpu=True)
