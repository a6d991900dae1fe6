"""The script's warm-up step (`seal_hub.training.warmup.warm_up` with `WarmupArguments`): the policy wrapped in its
LoRA adapter, then trained with the run's settings, or loaded from a shared folder only when it can be shared."""

from __future__ import annotations

from dataclasses import fields
from types import SimpleNamespace

import pytest
from peft import LoraConfig

import seal_hub.training.warmup as warmup_module
from seal_hub.models import build_tiny_model, load_policy
from seal_hub.training import SealConfig
from seal_hub.training.warmup import WarmupArguments, WarmupMismatchError, warm_up


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from seal_hub.models import PolicyConfig

    path = build_tiny_model(tmp_path_factory.mktemp("tiny"))
    return PolicyConfig(model_name_or_path=str(path), use_peft=True, lora_r=4, lora_alpha=8)


def config(tmp_path) -> SealConfig:
    return SealConfig(output_dir=str(tmp_path / "run"), use_cpu=True, max_context_tokens=512, seed=3, report_to=[])


def test_the_warm_up_flags_keep_their_names_and_defaults():
    args = WarmupArguments()
    assert [f.name for f in fields(args)] == [
        "sft_warmup_steps",
        "sft_learning_rate",
        "sft_batch_size",
        "sft_frozen_context",
        "sft_warmup_dir",
    ]
    assert (args.sft_warmup_steps, args.sft_learning_rate, args.sft_batch_size) == (0, 1e-4, 1)
    assert args.sft_frozen_context is False and args.sft_warmup_dir is None


def test_warm_up_wraps_the_policy_in_its_lora_adapter_and_trains_with_the_runs_settings(tiny, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(warmup_module, "warmup_dataset", lambda suite, tasks, tokenizer: ["row"])
    monkeypatch.setattr(warmup_module, "run_warmup", lambda *a, **k: calls.append((a, k)))
    model, tokenizer = load_policy(tiny)
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj"], task_type="CAUSAL_LM")
    args = WarmupArguments(sft_warmup_steps=5, sft_learning_rate=5e-4, sft_batch_size=8)
    wrapped = warm_up(model, lora, tokenizer, None, [], args, config(tmp_path), tiny)
    assert hasattr(wrapped, "peft_config") and calls  # the adapter GRPO goes on training
    (_, _, dataset, steps), sft = calls[0][0], calls[0][1]
    assert (dataset, steps) == (["row"], 5)
    assert (sft["learning_rate"], sft["gradient_accumulation_steps"], sft["per_device_train_batch_size"]) == (
        5e-4,
        8,
        1,
    )
    assert (sft["max_length"], sft["seed"], sft["output_dir"]) == (512, 3, str(tmp_path / "run" / "sft-warmup"))


def test_a_shared_warm_up_needs_a_lora_policy(tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(warmup_module, "run_warmup", lambda *a, **k: pytest.fail("trained a warm-up it cannot share"))
    model, tokenizer = load_policy(tiny)
    args = WarmupArguments(sft_warmup_steps=2, sft_warmup_dir=str(tmp_path / "shared"))
    tasks = [SimpleNamespace(id="t1")]
    with pytest.raises(WarmupMismatchError, match="needs use_peft true"):
        warm_up(model, None, tokenizer, None, tasks, args, config(tmp_path), tiny)


def test_the_adapter_the_warm_up_starts_from_is_a_function_of_the_seed(tiny, tmp_path, monkeypatch):
    """PEFT draws LoRA's initial weights from the global RNG, which torch seeds anew in every process (two runs of
    the demo once differed by a held-out task for that alone): warm_up seeds it with the run's seed first."""
    import torch

    monkeypatch.setattr(warmup_module, "warmup_dataset", lambda suite, tasks, tokenizer: ["row"])
    monkeypatch.setattr(warmup_module, "run_warmup", lambda *a, **k: None)
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj"], task_type="CAUSAL_LM")
    args = WarmupArguments(sft_warmup_steps=1)

    def initial_adapter(seed: int, draws: int) -> list[torch.Tensor]:
        torch.rand(draws)  # whatever ran before the warm-up (an evaluation, another process's start)
        model, tokenizer = load_policy(tiny)
        run = SealConfig(output_dir=str(tmp_path / "run"), use_cpu=True, seed=seed, report_to=[])
        wrapped = warm_up(model, lora, tokenizer, None, [], args, run, tiny)
        return [p.detach().clone() for name, p in wrapped.named_parameters() if "lora_A" in name]

    first, second, other = initial_adapter(3, 1), initial_adapter(3, 1000), initial_adapter(4, 1)
    assert first and all(torch.equal(a, b) for a, b in zip(first, second, strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(first, other, strict=True))
