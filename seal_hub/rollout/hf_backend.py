"""Batched generation on a Hugging Face causal LM with prefix and per-episode KV caching.

A BFCL prompt is mostly its system prompt and tool schemas (thousands of tokens, the same for every rollout of
a task and every step of an episode), and an episode only ever appends to its token sequence. So:

- the KV cache of a task's shared prefix is computed once and reused by every rollout of that task (an LRU of
  `max_prefixes` entries); extending it never mutates it (`torch.cat` makes new tensors: copy-on-extend);
- each episode keeps the cache of everything it has seen, so a step only prefills the new environment tokens;
- the decode loop runs every live episode at once: caches left-padded to a common length, an attention mask
  hiding the padding, and explicit position ids so each row keeps its true positions (RoPE); the batch cache
  is one buffer reserved for the whole loop, so each decoded token is written in place, not re-concatenated;
- finished rows leave the batch as soon as they end, and their caches are kept for their next step.

Not covered: speculative decoding, paged attention, or multi-GPU inference (use the vLLM backend there).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from seal_hub.rollout.backend import Generation, GenerationRequest, SamplingConfig

KV = tuple[tuple[torch.Tensor, torch.Tensor], ...]  # per layer: keys, values shaped [batch, heads, seq, dim]


@dataclass
class _Cached:
    ids: tuple[int, ...]
    kv: KV | None  # None: nothing cached


def _slice(kv: KV | None, start: int, stop: int | None = None, rows: slice | torch.Tensor | None = None) -> KV | None:
    if kv is None:
        return None
    sel = slice(None) if rows is None else rows
    return tuple((k[sel, :, start:stop], v[sel, :, start:stop]) for k, v in kv)


class _ReservedLayer(DynamicLayer):
    """A cache layer in a buffer reserved up front: appending a token writes in place instead of re-copying
    the whole cache (`DynamicLayer` concatenates, which costs O(length) per decoded token)."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, capacity: int) -> None:
        super().__init__()
        batch, heads, length, dim = keys.shape
        self._keys = keys.new_empty((batch, heads, max(capacity, length), dim))
        self._values = values.new_empty((batch, values.shape[1], max(capacity, length), values.shape[3]))
        self._keys[:, :, :length] = keys
        self._values[:, :, :length] = values
        self._length = length
        self.dtype, self.device = keys.dtype, keys.device
        self.is_initialized = True
        self._refresh()

    def _refresh(self) -> None:
        self.keys = self._keys[:, :, : self._length]
        self.values = self._values[:, :, : self._length]

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        end = self._length + key_states.shape[-2]
        if end > self._keys.shape[2]:  # out of room: grow by doubling (rare: capacity covers the decode loop)
            self._keys = torch.cat([self._keys, torch.empty_like(self._keys)], dim=2)
            self._values = torch.cat([self._values, torch.empty_like(self._values)], dim=2)
            return self.update(key_states, value_states)
        self._keys[:, :, self._length : end] = key_states
        self._values[:, :, self._length : end] = value_states
        self._length = end
        self._refresh()
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self._length

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self._keys, self._values = self._keys[indices], self._values[indices]
        self._refresh()


def _reserved_cache(kv: KV, capacity: int) -> DynamicCache:
    cache = DynamicCache()
    cache.layers = [_ReservedLayer(k, v, capacity) for k, v in kv]
    return cache


def _cache(kv: KV | None) -> DynamicCache:
    return DynamicCache(ddp_cache_data=kv) if kv is not None else DynamicCache()


def _kv(cache: DynamicCache) -> KV:
    return tuple((layer.keys, layer.values) for layer in cache.layers)


class HFBackend:
    """`GenerationBackend` for a (PEFT-wrapped or plain) `transformers` causal LM."""

    def __init__(
        self, model, eos_token_ids: Iterable[int], pad_token_id: int = 0, max_prefixes: int = 32, seed: int = 0
    ) -> None:
        self.model = model
        self.eos_token_ids = frozenset(int(i) for i in eos_token_ids)
        if not self.eos_token_ids:
            raise ValueError("HFBackend needs at least one end-of-turn token id (eos_token_ids)")
        self.pad_token_id = pad_token_id
        self.max_prefixes = max_prefixes
        self._sessions: dict[str, _Cached] = {}
        self._prefixes: OrderedDict[tuple[int, ...], _Cached] = OrderedDict()
        self._generator = torch.Generator(device="cpu").manual_seed(seed)
        self.prefilled_tokens = 0  # tokens run through the model to build caches
        self.reused_tokens = 0  # tokens whose KV came from a cache instead

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def release(self, session: str) -> None:
        self._sessions.pop(session, None)

    def clear(self) -> None:
        """Drop every cache (call after the weights change: cached KV belongs to the old weights)."""
        self._sessions.clear()
        self._prefixes.clear()

    # ----- caching -----

    def _forward(self, input_ids: torch.Tensor, cache: DynamicCache, mask: torch.Tensor, positions: torch.Tensor):
        """One forward pass that extends `cache` in place; returns the last position's logits."""
        out = self.model(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=positions,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,  # a prefill needs the last position's logits only, not a [tokens x vocab] matrix
        )
        return out.logits[:, -1, :].float()

    def _extend(self, cached: _Cached, ids: tuple[int, ...]) -> _Cached:
        """`cached` extended to cover `ids` (which it must prefix), running only the missing tokens."""
        start = len(cached.ids)
        if start == len(ids):
            return cached
        new = torch.tensor([ids[start:]], device=self.device)
        mask = torch.ones((1, len(ids)), dtype=torch.long, device=self.device)
        positions = torch.arange(start, len(ids), device=self.device).unsqueeze(0)
        cache = _cache(cached.kv)
        self._forward(new, cache, mask, positions)
        self.prefilled_tokens += len(ids) - start
        return _Cached(ids, _kv(cache))

    def _shared_prefix(self, prefix: tuple[int, ...]) -> _Cached:
        hit = self._prefixes.get(prefix)
        if hit is not None:
            self._prefixes.move_to_end(prefix)
            return hit
        computed = self._extend(_Cached((), None), prefix)
        self._prefixes[prefix] = computed
        while len(self._prefixes) > self.max_prefixes:
            self._prefixes.popitem(last=False)
        return computed

    def _resume(self, request: GenerationRequest) -> _Cached:
        """A cache covering all of the request's tokens but the last (which the decode loop feeds)."""
        ids = request.token_ids
        if not ids:
            raise ValueError(f"session {request.session}: empty prompt")
        cached = self._sessions.get(request.session)
        if cached is None or ids[: len(cached.ids)] != cached.ids:
            cached = _Cached((), None)
            if 0 < request.prefix_length <= len(ids):
                cached = self._shared_prefix(ids[: request.prefix_length])
        if len(cached.ids) >= len(ids):  # nothing new: recompute the last token to get its logits
            cached = _Cached(ids[:-1], _slice(cached.kv, 0, len(ids) - 1))
        self.reused_tokens += len(cached.ids)
        return self._extend(cached, ids[:-1])

    # ----- sampling -----

    def _sample(self, logits: torch.Tensor, sampling: SamplingConfig) -> tuple[torch.Tensor, torch.Tensor]:
        if sampling.temperature == 0:
            logprobs = torch.log_softmax(logits, dim=-1)
            tokens = logprobs.argmax(dim=-1)
            return tokens, logprobs.gather(-1, tokens[:, None]).squeeze(-1)
        scaled = logits / sampling.temperature
        if sampling.top_p < 1.0:
            sorted_logits, order = scaled.sort(dim=-1, descending=True)
            cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
            drop = cumulative - sorted_logits.softmax(dim=-1) >= sampling.top_p  # keeps at least the top token
            sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
            scaled = torch.full_like(scaled, float("-inf")).scatter(-1, order, sorted_logits)
        logprobs = torch.log_softmax(scaled, dim=-1)
        tokens = torch.multinomial(logprobs.exp().cpu(), 1, generator=self._generator).squeeze(-1).to(logits.device)
        return tokens, logprobs.gather(-1, tokens[:, None]).squeeze(-1)

    # ----- the batched step -----

    @torch.inference_mode()
    def generate(self, requests: list[GenerationRequest], sampling: SamplingConfig) -> list[Generation]:
        if not requests:
            return []
        was_training = self.model.training
        self.model.eval()
        try:
            return self._generate(requests, sampling)
        finally:
            self.model.train(was_training)

    def _generate(self, requests: list[GenerationRequest], sampling: SamplingConfig) -> list[Generation]:
        caches = [self._resume(r) for r in requests]
        lengths = [len(c.ids) for c in caches]
        width = max(lengths)
        device = self.device
        kv = None
        if width > 0:
            layers = []
            for layer in range(len(next(c.kv for c in caches if c.kv is not None))):
                keys, values = [], []
                for cached, length in zip(caches, lengths, strict=True):
                    if cached.kv is None:
                        ref = next(c.kv for c in caches if c.kv is not None)[layer][0]
                        k = v = ref.new_zeros((1, ref.shape[1], 0, ref.shape[3]))
                    else:
                        k, v = cached.kv[layer]
                    pad = width - length
                    keys.append(torch.nn.functional.pad(k, (0, 0, pad, 0)))
                    values.append(torch.nn.functional.pad(v, (0, 0, pad, 0)))
                layers.append((torch.cat(keys), torch.cat(values)))
            kv = tuple(layers)
        mask = torch.tensor([[0] * (width - n) + [1] * n for n in lengths], dtype=torch.long, device=device)
        positions = torch.tensor(lengths, device=device)
        inputs = torch.tensor([r.token_ids[-1] for r in requests], device=device)
        limits = [r.max_new_tokens or sampling.max_new_tokens for r in requests]
        rows = list(range(len(requests)))  # request index of each live batch row
        generated: list[list[int]] = [[] for _ in requests]
        logprobs: list[list[float]] = [[] for _ in requests]
        finished = [False] * len(requests)
        # one cache for the whole loop, with room reserved for every token it will decode
        cache = _reserved_cache(kv, width + max(limits) + 1) if kv is not None else _cache(None)
        while rows:
            mask = torch.cat([mask, torch.ones((len(rows), 1), dtype=torch.long, device=device)], dim=1)
            logits = self._forward(inputs[:, None], cache, mask, positions[:, None])
            tokens, token_logprobs = self._sample(logits, sampling)
            keep = []
            for b, index in enumerate(rows):
                token = int(tokens[b])
                generated[index].append(token)
                logprobs[index].append(float(token_logprobs[b]))
                done_eos = token in self.eos_token_ids
                if done_eos or len(generated[index]) >= limits[index]:
                    finished[index] = done_eos
                    covered = requests[index].token_ids + tuple(generated[index][:-1])
                    start = mask.shape[1] - len(covered)
                    row = tuple(
                        (k[b : b + 1, :, start:].clone(), v[b : b + 1, :, start:].clone()) for k, v in _kv(cache)
                    )
                    self._sessions[requests[index].session] = _Cached(covered, row)
                else:
                    keep.append(b)
            if len(keep) < len(rows):
                if not keep:
                    break
                index_tensor = torch.tensor(keep, dtype=torch.long, device=device)
                cache.batch_select_indices(index_tensor)
                mask, tokens, positions = mask[index_tensor], tokens[index_tensor], positions[index_tensor]
                rows = [rows[b] for b in keep]
            inputs = tokens
            positions = positions + 1
        return [Generation(tuple(generated[i]), tuple(logprobs[i]), finished[i]) for i in range(len(requests))]
