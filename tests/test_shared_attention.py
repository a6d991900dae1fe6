"""A group's decode attention over a shared prompt, read once, equals SDPA over each row's concatenated keys."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from seal_hub.rollout.shared_attention import group_attention


def _reference(query, prompt_keys, prompt_values, tail_keys, tail_values, scaling):
    heads, kv_heads = query.shape[1], prompt_keys.shape[0]
    out = []
    for i in range(query.shape[0]):
        keys = torch.cat([prompt_keys, tail_keys[i]], dim=1).repeat_interleave(heads // kv_heads, dim=0)
        values = torch.cat([prompt_values, tail_values[i]], dim=1).repeat_interleave(heads // kv_heads, dim=0)
        out.append(F.scaled_dot_product_attention(query[i : i + 1], keys[None], values[None], scale=scaling))
    return torch.cat(out)


@pytest.mark.parametrize(("heads", "kv_heads"), [(4, 4), (8, 2), (9, 3)])
@pytest.mark.parametrize("scaling", [None, 0.3])
def test_group_attention_matches_sdpa_over_concatenated_rows(heads, kv_heads, scaling):
    torch.manual_seed(0)
    rows, prompt, dim = 5, 37, 16
    query = torch.randn(rows, heads, 1, dim)
    prompt_keys, prompt_values = torch.randn(kv_heads, prompt, dim), torch.randn(kv_heads, prompt, dim)
    lengths = [0, 1, 6, 13, 2]  # a row that has not decoded yet has no tail
    tail_keys = [torch.randn(kv_heads, n, dim) for n in lengths]
    tail_values = [torch.randn(kv_heads, n, dim) for n in lengths]
    got = group_attention(query, prompt_keys, prompt_values, tail_keys, tail_values, scaling)
    want = _reference(query, prompt_keys, prompt_values, tail_keys, tail_values, scaling)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_group_attention_decodes_one_position_per_row():
    query = torch.randn(2, 2, 3, 4)
    with pytest.raises(ValueError, match="one position per row"):
        group_attention(query, torch.randn(2, 5, 4), torch.randn(2, 5, 4), [torch.randn(2, 1, 4)] * 2, [])


def test_group_attention_with_no_tails_is_attention_over_the_prompt():
    torch.manual_seed(1)
    query, keys, values = torch.randn(3, 4, 1, 8), torch.randn(2, 11, 8), torch.randn(2, 11, 8)
    empty = [torch.zeros(2, 0, 8)] * 3
    got = group_attention(query, keys, values, empty, empty)
    torch.testing.assert_close(got, _reference(query, keys, values, empty, empty, None), rtol=1e-5, atol=1e-5)
