"""Per-row decode attention: the folded grouped-query product equals SDPA's own `enable_gqa` product."""

import pytest
import torch
from torch.nn import functional as F

from seal_hub.rollout.rows_attention import _row_attention


@pytest.mark.parametrize(("heads", "kv_heads", "queries"), [(9, 3, 1), (8, 2, 1), (4, 4, 1), (6, 2, 5)])
def test_row_attention_equals_grouped_sdpa(heads, kv_heads, queries):
    generator = torch.Generator().manual_seed(0)
    query = torch.randn(1, heads, queries, 16, generator=generator)
    keys = torch.randn(1, kv_heads, 37, 16, generator=generator)
    values = torch.randn(1, kv_heads, 37, 16, generator=generator)
    expected = F.scaled_dot_product_attention(query, keys, values, scale=0.3, enable_gqa=heads != kv_heads)
    got = _row_attention(query, keys, values, 0.3)
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


def test_each_query_head_reads_its_own_kv_head():
    """Head h of a group reads KV head h // group: a value tensor that is constant per KV head shows it."""
    keys = torch.zeros(1, 2, 5, 4)
    values = torch.stack([torch.full((5, 4), 1.0), torch.full((5, 4), 2.0)])[None]
    out = _row_attention(torch.randn(1, 6, 1, 4), keys, values, None)
    assert out[0, :, 0, 0].tolist() == [1.0, 1.0, 1.0, 2.0, 2.0, 2.0]
