"""Decode attention of a group of rows that share a prompt: the prompt read once, in place, for every row.

The G rollouts of one task hold the task prompt's KV once (shared blocks of `seal_hub.rollout.kv_blocks`). A
decode step of those G rows attends, per row, to the shared prompt and then to the row's own tail. Instead of
gathering (copying) the prompt into each row and running G attentions, `group_attention`:

- runs ONE product of all G rows' queries against the shared prompt's keys and values (grouped-query heads and the
  G rows folded onto the query axis of each KV head, so each prompt key is read once a step, not G times);
- runs one product of each row's query against its own tail (the tails padded to the longest, padding masked);
- merges the two partial results with their log-sum-exp, which gives exactly the softmax over the concatenation
  (up to floating-point rounding; the tests compare with SDPA over the concatenated keys).

Not covered: more than one query position per row (prefill uses the model's own attention), attention with
extra inputs per head (sinks, ALiBi, soft-capping), and reading keys straight from pool blocks (the caller hands
views of the prompt and the tails).
"""

from __future__ import annotations

import torch


def _partial(scores: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax-weighted values and the log-sum-exp of `scores` (over the last axis)."""
    lse = torch.logsumexp(scores, dim=-1, keepdim=True)
    weights = torch.exp(scores - lse).nan_to_num(0.0)  # a fully masked row: weights 0, lse -inf
    return weights @ values, lse


def attention_with_lse(
    query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, mask: torch.Tensor | None, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention of `query` [B, H, Q, dim] over `keys`/`values` [B, H, K, dim] (read in place, strides as they
    come) with an additive `mask` broadcast to [B, H, Q, K]: the output and the log-sum-exp of the scores [B, H, Q]
    (float32). On CPU, PyTorch's fused flash kernel, which returns both in one pass; elsewhere the plain product."""
    if query.device.type == "cpu":
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            query, keys, values, 0.0, False, attn_mask=mask, scale=scale
        )
        return out, lse
    scores = (query @ keys.transpose(-1, -2)).float() * scale
    if mask is not None:
        scores = scores + mask
    out, lse = _partial(scores, values.float())
    return out.to(query.dtype), lse.squeeze(-1)


def merge(
    first: torch.Tensor, first_lse: torch.Tensor, second: torch.Tensor, second_lse: torch.Tensor
) -> torch.Tensor:
    """Two partial attentions over disjoint key sets merged into the attention over their union: outputs
    [..., Q, dim], log-sum-exps [..., Q] (a -inf one, an empty key set, weighs 0)."""
    top = torch.maximum(first_lse, second_lse)
    a, b = torch.exp(first_lse - top)[..., None], torch.exp(second_lse - top)[..., None]
    return ((a * first.float() + b * second.float()) / (a + b)).to(first.dtype)


def group_attention(
    query: torch.Tensor,
    prompt_keys: torch.Tensor,
    prompt_values: torch.Tensor,
    tail_keys: list[torch.Tensor],
    tail_values: list[torch.Tensor],
    scaling: float | None = None,
) -> torch.Tensor:
    """One decode step of G rows sharing a prompt.

    `query` [G, heads, 1, dim]; `prompt_keys`/`prompt_values` [kv_heads, P, dim] (the shared prompt, read in
    place); `tail_keys[i]`/`tail_values[i]` [kv_heads, T_i, dim] (row i's own positions after the prompt, T_i may
    be 0). Returns [G, heads, 1, dim], what SDPA over row i's concatenated keys gives for each row.
    """
    rows, heads, positions, dim = query.shape
    if positions != 1:
        raise ValueError(f"group_attention decodes one position per row, got {positions}")
    if len(tail_keys) != rows or len(tail_values) != rows:
        raise ValueError(f"{rows} rows of queries but {len(tail_keys)} tails")
    kv_heads = prompt_keys.shape[0]
    group = heads // kv_heads
    scale = dim**-0.5 if scaling is None else scaling
    # [kv_heads, G * group, dim]: every row's heads of one KV head on one query axis
    folded = query.reshape(rows, kv_heads, group, dim).permute(1, 0, 2, 3).reshape(kv_heads, rows * group, dim)
    prompt_out, prompt_lse = _partial(folded @ prompt_keys.transpose(-1, -2) * scale, prompt_values)

    longest = max(t.shape[1] for t in tail_keys)
    keys = query.new_zeros(rows, kv_heads, longest, dim)
    values = query.new_zeros(rows, kv_heads, longest, dim)
    mask = torch.full((rows, 1, 1, longest), float("-inf"), dtype=query.dtype, device=query.device)
    for i, (k, v) in enumerate(zip(tail_keys, tail_values, strict=True)):
        keys[i, :, : k.shape[1]] = k
        values[i, :, : v.shape[1]] = v
        mask[i, ..., : k.shape[1]] = 0.0
    per_row = query.reshape(rows, kv_heads, group, dim)  # [G, kv_heads, group, dim]
    tail_out, tail_lse = _partial(per_row @ keys.transpose(-1, -2) * scale + mask, values)

    # back to [G, kv_heads, group, ...] and merge
    prompt_out = prompt_out.reshape(kv_heads, rows, group, dim).permute(1, 0, 2, 3)
    prompt_lse = prompt_lse.reshape(kv_heads, rows, group, 1).permute(1, 0, 2, 3)
    top = torch.maximum(prompt_lse, tail_lse)
    a, b = torch.exp(prompt_lse - top), torch.exp(tail_lse - top)
    out = (a * prompt_out + b * tail_out) / (a + b)
    return out.reshape(rows, heads, 1, dim)
