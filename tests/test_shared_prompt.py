"""The shared-prompt loss forward gives TRL's log-probs, entropies and gradients with less work."""

from contextlib import nullcontext
from types import SimpleNamespace

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import Qwen2Config, Qwen2ForCausalLM
from trl import GRPOTrainer
from trl.trainer.utils import add_fused_lm_head

from seal_hub.training.shared_prompt import prompt_groups, shared_prompt_logps, shares_prompts


def _model():
    config = Qwen2Config(
        vocab_size=97,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config)
    add_fused_lm_head(model, outputs=("log_probs", "entropy"))
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"], init_lora_weights=False)
    return get_peft_model(model, lora).train()


def _batch():
    """Three prompts (left-padded to 9), 2, 3 and 1 completions each (right-padded to 6), rows shuffled."""
    generator = torch.Generator().manual_seed(1)
    prompts = [torch.randint(1, 97, (n,), generator=generator) for n in (9, 6, 4)]
    rows, masks = [], []
    for prompt_index, count in ((0, 2), (1, 3), (2, 1)):
        prompt = prompts[prompt_index]
        for _ in range(count):
            length = int(torch.randint(2, 7, (1,), generator=generator))
            completion = torch.randint(1, 97, (length,), generator=generator)
            ids = torch.cat([torch.zeros(9 - len(prompt), dtype=torch.long), prompt, completion])
            ids = torch.cat([ids, torch.zeros(15 - len(ids), dtype=torch.long)])
            mask = torch.zeros(15, dtype=torch.long)
            mask[9 - len(prompt) : 9 + length] = 1
            rows.append(ids)
            masks.append(mask)
    order = torch.tensor([3, 0, 5, 1, 4, 2])
    return torch.stack(rows)[order], torch.stack(masks)[order], 6


def _trl(model, input_ids, attention_mask, logits_to_keep):
    fake = SimpleNamespace(accelerator=SimpleNamespace(autocast=nullcontext))
    logps, entropies, _ = GRPOTrainer._get_per_token_logps_and_entropies.__wrapped__(
        fake, model, input_ids, attention_mask, logits_to_keep, compute_entropy=True
    )
    return logps, entropies


def _grads(model, logps, mask):
    model.zero_grad()
    (logps * mask).sum().backward()
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.requires_grad}


def test_groups_find_equal_prompts_wherever_the_rows_are():
    input_ids, attention_mask, keep = _batch()
    first, inverse = prompt_groups(input_ids[:, :-keep], attention_mask[:, :-keep])
    assert first.numel() == 3
    assert torch.equal(input_ids[first[inverse], :-keep], input_ids[:, :-keep])
    assert shares_prompts(input_ids, attention_mask, keep)
    assert not shares_prompts(input_ids[[0, 1, 2]], attention_mask[[0, 1, 2]], keep)  # one row per prompt


def test_log_probs_entropies_and_gradients_equal_trls():
    model = _model()
    input_ids, attention_mask, keep = _batch()
    mask = attention_mask[:, -keep:].float()
    want_logps, want_entropies = _trl(model, input_ids, attention_mask, keep)
    want_grads = _grads(model, want_logps, mask)
    logps, entropies = shared_prompt_logps(model, input_ids, attention_mask, keep, compute_entropy=True)
    grads = _grads(model, logps, mask)
    torch.testing.assert_close(logps * mask, want_logps * mask, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(entropies * mask, want_entropies * mask, rtol=1e-4, atol=1e-5)
    assert want_grads.keys() == grads.keys() and len(grads) == 12
    for name, want in want_grads.items():
        assert want.abs().sum() > 0, name
        torch.testing.assert_close(grads[name], want, rtol=1e-4, atol=1e-6, msg=name)


def test_a_wrong_prompt_cache_would_be_caught():
    """The comparison can fail: scoring rows against another group's prompt changes the log-probs."""
    model = _model()
    input_ids, attention_mask, keep = _batch()
    want, _ = _trl(model, input_ids, attention_mask, keep)
    swapped = input_ids.clone()
    swapped[:, :-keep] = input_ids[torch.tensor([1, 0, 3, 2, 5, 4]), :-keep]
    swapped_mask = attention_mask.clone()
    swapped_mask[:, :-keep] = attention_mask[torch.tensor([1, 0, 3, 2, 5, 4]), :-keep]
    with torch.no_grad():
        got, _ = shared_prompt_logps(model, swapped, swapped_mask, keep, compute_entropy=False)
    mask = attention_mask[:, -keep:].bool()
    with pytest.raises(AssertionError):
        torch.testing.assert_close(got[mask], want.detach()[mask], rtol=1e-4, atol=1e-5)


def test_whole_groups_puts_each_groups_rows_in_one_micro_batch_and_keeps_every_row():
    """TRL's shuffled cut of 3 groups of 4 rows into 3 micro-batches, regrouped: one prompt per micro-batch, the
    same rows (prompt, completion, advantage together), the scalars as they were."""
    from trl.trainer.utils import shuffle_sequence_dict, split_tensor_dict

    from seal_hub.training.shared_prompt import whole_groups

    torch.manual_seed(0)
    prompts = torch.tensor([[1, 2, 3]] * 4 + [[4, 5, 6]] * 4 + [[0, 7, 8]] * 4)
    generation = {
        "prompt_ids": prompts,
        "prompt_mask": torch.tensor([[1, 1, 1]] * 8 + [[0, 1, 1]] * 4),
        "completion_ids": torch.arange(24).reshape(12, 2),
        "advantages": torch.arange(12, dtype=torch.float),
        "num_items_in_batch": torch.tensor(24),
        "ignored": None,
    }
    shuffled = split_tensor_dict(shuffle_sequence_dict(generation), 3)
    assert any(len({tuple(r) for r in b["prompt_ids"].tolist()}) > 1 for b in shuffled)  # mixed, or nothing to show
    regrouped = whole_groups(shuffled)
    assert [len({tuple(r) for r in b["prompt_ids"].tolist()}) for b in regrouped] == [1, 1, 1]
    rows = lambda batches: sorted(  # noqa: E731
        (tuple(b["prompt_ids"][i].tolist()), tuple(b["completion_ids"][i].tolist()), float(b["advantages"][i]))
        for b in batches
        for i in range(len(b["advantages"]))
    )
    assert rows(regrouped) == rows(shuffled)
    assert all(int(b["num_items_in_batch"]) == 24 and b["ignored"] is None for b in regrouped)
