"""Attention over a shared task prefix and each row's own tail, read in place and merged by their log-sum-exp.

While `HFBackend` generates, `rows_attention(model)` points the model's attention layers at a transformers
attention function (registered as ``seal_kv_rows:<original>``) that, given the `KVRows` passed as the ``kv_rows``
forward argument:

- in a decode step runs, per layer, one call per bucket of `step.DecodeBatch` over its slots' tails (each masked
  past its own length; once few of its rows still decode, one call per such row over its own tail; a bucket whose
  rows have all ended is not read) and one call per group of rows sharing a prefix view, the group's query heads
  folded onto the query axis of each KV head, so the prefix is read once a step for the whole group
  (`decode_attention`);
- in a packed prefill forward (`step.PackedPrefill`) runs each piece's queries over its own row's shared prefix
  (causal inside it) and tail (causal) (`prefill_attention`);
- otherwise (any call without ``kv_rows``) calls the model's original implementation with the mask it would have
  built (``eager`` models get SDPA, the same product).

Two partial attentions over disjoint keys merge into the softmax over their union, exactly up to rounding (`merge`).
On CPU `attention_with_lse` is PyTorch's fused flash kernel, which returns the log-sum-exp with the output;
elsewhere the plain product. The original implementation comes back when the context ends, also on error.

Not covered: sliding-window layers attend to the whole row (as the cache keeps it), and attention with extra inputs
per head (sinks, ALiBi, soft-capping) has no decode path here: roll such models out with vLLM (`use_vllm`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from transformers import PretrainedConfig
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS, AttentionInterface

from seal_hub.generation.hf.cache import KVRows
from seal_hub.generation.hf.step import DecodeBatch, PackedPrefill, Part

NAME = "seal_kv_rows"


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


def _registered(original: str) -> str:
    """The name of the per-row attention that falls back to `original`, registered on first use."""
    base = original if original in ALL_ATTENTION_FUNCTIONS and original in ALL_MASK_ATTENTION_FUNCTIONS else "sdpa"
    name = f"{NAME}:{base}"
    if name in ALL_ATTENTION_FUNCTIONS:
        return name
    fallback = sdpa_attention_forward if base == "sdpa" else ALL_ATTENTION_FUNCTIONS[base]

    def attention(module, query, key, value, attention_mask, *args, kv_rows: KVRows | None = None, **kwargs):
        if kv_rows is not None and kv_rows.packed is not None:
            out = prefill_attention(kv_rows.packed, query, kwargs.get("scaling"))
            return out.transpose(1, 2).contiguous(), None
        if kv_rows is None or kv_rows.step is None or not kv_rows.step.active:
            return fallback(module, query, key, value, attention_mask, *args, **kwargs)
        out = decode_attention(kv_rows.step, module.layer_idx, query, kwargs.get("scaling"))
        return out.transpose(1, 2).contiguous(), None

    AttentionInterface.register(name, attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(name, ALL_MASK_ATTENTION_FUNCTIONS[base])
    return name


def decode_attention(step: DecodeBatch, layer: int, query: torch.Tensor, scaling: float | None) -> torch.Tensor:
    """One decode step's attention of `layer`: `query` [rows, heads, 1, dim] -> [rows, heads, 1, dim]."""
    rows, heads, positions, dim = query.shape
    if positions != 1:
        raise ValueError(f"decode attention takes one position per row, got {positions}")
    kv_heads = step.kv_heads
    group = heads // kv_heads
    scale = dim**-0.5 if scaling is None else scaling
    folded = query.reshape(rows, kv_heads, group, dim)  # each KV head's query heads on its query axis
    if step.identity and not step.per_row:  # one bucket, every slot decoding in order: no gather, no scatter
        part = step.parts[0]
        tail_out, tail_lse = attention_with_lse(
            folded, *step.tails_of(layer, part), step.mask(part, query.dtype), scale
        )
    else:
        tail_out = folded.new_empty(folded.shape)
        tail_lse = torch.empty((rows, kv_heads, group), dtype=torch.float32, device=query.device)
        for part in step.parts:
            _bucket_attention(step, layer, part, folded, scale, tail_out, tail_lse)
    if not step.groups:
        return tail_out.reshape(rows, heads, 1, dim)
    prefix_out = torch.zeros_like(tail_out)
    prefix_lse = torch.full_like(tail_lse, float("-inf"))
    for g in step.groups:
        keys, values = g.shared.view(layer, g.length)
        members = folded[g.start : g.stop] if g.index is None else folded[g.index]
        count = members.shape[0]
        # [1, kv_heads, count * group, dim]: the group's rows on one query axis, the prefix read once
        stacked = members.permute(1, 0, 2, 3).reshape(1, kv_heads, count * group, dim)
        out, lse = attention_with_lse(stacked, keys, values, None, scale)
        out = out.reshape(kv_heads, count, group, dim).permute(1, 0, 2, 3)
        lse = lse.reshape(kv_heads, count, group).permute(1, 0, 2)
        if g.index is None:
            prefix_out[g.start : g.stop], prefix_lse[g.start : g.stop] = out, lse
        else:
            prefix_out[g.index], prefix_lse[g.index] = out, lse
    return merge(prefix_out, prefix_lse, tail_out, tail_lse).reshape(rows, heads, 1, dim)


def _bucket_attention(
    step: DecodeBatch,
    layer: int,
    part: Part,
    folded: torch.Tensor,
    scale: float,
    out: torch.Tensor,
    lse: torch.Tensor,
) -> None:
    """One bucket's tail attention into its batch rows of `out` [rows, kv_heads, group, dim] and `lse`."""
    if part.per_row:  # few of its rows left decoding: each over its own tail alone, no finished row's slot read
        for i in part.rows:
            out[i : i + 1], lse[i : i + 1] = attention_with_lse(
                folded[i : i + 1], *step.tail_of(layer, step.slots[i]), None, scale
            )
        return
    keys, values = step.tails_of(layer, part)
    mask = step.mask(part, folded.dtype)
    if part.direct:  # its batch rows are its slots in order
        first, stop = part.rows[0], part.rows[-1] + 1
        out[first:stop], lse[first:stop] = attention_with_lse(folded[first:stop], keys, values, mask, scale)
        return
    queries = folded.new_zeros((keys.shape[0], *folded.shape[1:]))  # slots whose rows left ride along, query 0
    queries[part.local_index] = folded[part.row_index]
    bucket_out, bucket_lse = attention_with_lse(queries, keys, values, mask, scale)
    out[part.row_index], lse[part.row_index] = bucket_out[part.local_index], bucket_lse[part.local_index]


def prefill_attention(packed: PackedPrefill, query: torch.Tensor, scaling: float | None) -> torch.Tensor:
    """A packed prefill forward's attention: `query` [1, heads, tokens, dim] -> the same shape, each piece's
    queries over its own row's positions (the shared prefix and the tail read in place, merged by log-sum-exp)."""
    _, heads, _, dim = query.shape
    scale = dim**-0.5 if scaling is None else scaling
    outputs = []
    for piece, view in zip(packed.pieces, packed.views, strict=True):
        keys_of = view.prefix if view.prefix is not None else view.tail
        kv_heads = keys_of[0].shape[1]
        group = heads // kv_heads
        # [1, kv_heads, group * size, dim]: each KV head's query heads one after another on the query axis
        folded = query[:, :, piece.offset : piece.offset + piece.size].reshape(1, kv_heads, group * piece.size, dim)
        parts = []
        if view.prefix is not None:
            mask = packed.mask(piece, 0, query, group) if view.prefix_causal else None
            parts.append(attention_with_lse(folded, *view.prefix, mask, scale))
        if view.tail is not None:
            mask = packed.mask(piece, view.tail_first, query, group)
            parts.append(attention_with_lse(folded, *view.tail, mask, scale))
        out = parts[0][0] if len(parts) == 1 else merge(parts[0][0], parts[0][1], parts[1][0], parts[1][1])
        outputs.append(out.reshape(1, heads, piece.size, dim))
    return outputs[0] if len(outputs) == 1 else torch.cat(outputs, dim=2)


def _attention_configs(model) -> list[PretrainedConfig]:
    """The configs the model's attention layers read their implementation from (one per distinct object)."""
    configs: dict[int, PretrainedConfig] = {}
    for module in model.modules():
        config = getattr(module, "config", None)
        if hasattr(module, "layer_idx") and isinstance(config, PretrainedConfig):
            configs.setdefault(id(config), config)
    if not configs:
        raise ValueError(
            f"{type(model).__name__} has no attention layers with a `config` and `layer_idx`: the batched backend "
            "cannot run its per-row decode attention on it (roll it out with vLLM: use_vllm)"
        )
    return list(configs.values())


@contextmanager
def rows_attention(model) -> Iterator[None]:
    """While the context lasts, the model's attention layers run per-row decode attention (module docstring)."""
    configs = _attention_configs(model)
    originals = [config._attn_implementation for config in configs]
    try:
        for config, original in zip(configs, originals, strict=True):
            config._attn_implementation = _registered(original or "eager")
        yield
    finally:
        for config, original in zip(configs, originals, strict=True):
            config._attn_implementation = original
