"""Two partial attentions over disjoint key sets, merged by their log-sum-exp, equal SDPA over the union of the keys:
what the HF engine's attention over a shared prefix and a row's own tail relies on."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from seal_hub.generation.hf.attention import attention_with_lse, merge


@pytest.mark.parametrize("scale", [0.25, 0.3])
def test_merged_partial_attentions_equal_sdpa_over_the_concatenated_keys(scale):
    torch.manual_seed(0)
    query = torch.randn(2, 4, 3, 16)
    prefix_keys, prefix_values = torch.randn(2, 4, 20, 16), torch.randn(2, 4, 20, 16)
    tail_keys, tail_values = torch.randn(2, 4, 7, 16), torch.randn(2, 4, 7, 16)
    tail_mask = torch.zeros(2, 1, 1, 7)
    tail_mask[1, ..., 4:] = float("-inf")  # the second row holds 4 tail positions, the rest is padding
    prefix = attention_with_lse(query, prefix_keys, prefix_values, None, scale)
    tail = attention_with_lse(query, tail_keys, tail_values, tail_mask, scale)
    got = merge(*prefix, *tail)
    mask = torch.cat([torch.zeros(2, 1, 1, 20), tail_mask], dim=-1)
    keys, values = torch.cat([prefix_keys, tail_keys], dim=2), torch.cat([prefix_values, tail_values], dim=2)
    want = F.scaled_dot_product_attention(query, keys, values, attn_mask=mask, scale=scale)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
