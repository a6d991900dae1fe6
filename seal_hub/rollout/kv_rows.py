"""The KV cache of every live episode in one buffer per layer, one row per episode; and the prefix store.

`KVRows` keeps, per model layer, keys and values shaped ``[rows, kv_heads, capacity, head_dim]``. Row i holds
one session's tokens at positions 0..n-1, which are also the tokens' true positions (RoPE), so a batch of rows
needs no left padding: the decode batch is the view ``[:active, :, :width]`` and an attention mask hides each
row's unused tail. Buffers start zeroed: a masked position still enters the attention product with weight 0, and
0 x NaN (uninitialised memory) would poison the row. The model gets `transformers` caches that write in place:

- `prefill_cache(row, begin, end)`: a batch-of-one cache that writes positions begin..end-1 of one row;
- `decode_cache(active, positions, width)`: the first `active` rows, each writing one token at its own position.

`layout` puts a call's sessions in rows 0..n-1 (in request order, then sessions held but not requested), with
room for the tokens the call will decode. When rows move, leave or arrive, or the capacity changes, each layer is
re-allocated in turn and only the cached positions are copied, so the transient is one layer; released rows that
nobody adopts leave their task prefix in the `PrefixStore`, bounded by bytes (least recently used out first),
whose entries are handed over (not copied and kept) to the row that takes them: one copy of each token's KV.

Not covered: sharing one prefix copy between rows (a batched attention call needs each row's keys in one
tensor), sliding-window eviction (sliding layers see the whole cache and rely on their mask), and linear
attention / state-space layers (their models need their own cache classes).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import torch
from transformers.cache_utils import Cache, CacheLayerMixin

CAPACITY_STEP = 256  # capacity grows and shrinks in steps of this many positions
LayerKV = tuple[torch.Tensor, torch.Tensor]  # keys, values shaped [1, kv_heads, tokens, head_dim]


def num_layers(model) -> int:
    """How many cache layers a model's forward will ask for."""
    config = model.config
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    count = getattr(text, "num_hidden_layers", None)
    if not isinstance(count, int) or count < 1:
        raise ValueError(f"cannot tell how many layers {type(model).__name__} has (config.num_hidden_layers)")
    return count


@dataclass
class _Row:
    session: str
    ids: tuple[int, ...]  # the tokens whose KV the row holds, at positions 0..len-1
    prefix_length: int = 0
    retired: bool = False  # released: kept only as a source of its prefix until the next layout

    @property
    def prefix(self) -> tuple[int, ...]:
        return self.ids[: self.prefix_length] if 0 < self.prefix_length <= len(self.ids) else ()


def _holds(ids: tuple[int, ...], prefix: tuple[int, ...]) -> bool:
    return len(ids) >= len(prefix) > 0 and ids[len(prefix) - 1] == prefix[-1] and ids[: len(prefix)] == prefix


class PrefixStore:
    """Task prefixes' KV that no live row holds, up to `max_bytes` in all; least recently used out first."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[int, ...], list[LayerKV]] = OrderedDict()
        self.nbytes = 0
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, prefix: tuple[int, ...]) -> bool:
        return prefix in self._entries

    @staticmethod
    def size(kv: list[LayerKV]) -> int:
        return sum(k.nbytes + v.nbytes for k, v in kv)

    def put(self, prefix: tuple[int, ...], kv: list[LayerKV]) -> bool:
        """Keep `kv` for `prefix` (evicting the least recently used); False when it alone exceeds the bound."""
        size = self.size(kv)
        if not prefix or size > self.max_bytes or prefix in self._entries:
            return False
        while self._entries and self.nbytes + size > self.max_bytes:
            _, old = self._entries.popitem(last=False)
            self.nbytes -= self.size(old)
            self.evictions += 1
        self._entries[prefix] = kv
        self.nbytes += size
        return True

    def take(self, prefix: tuple[int, ...]) -> list[LayerKV] | None:
        """Hand the entry over (it leaves the store: the row that takes it is now its one copy)."""
        kv = self._entries.pop(prefix, None)
        if kv is not None:
            self.nbytes -= self.size(kv)
        return kv

    def clear(self) -> None:
        self._entries.clear()
        self.nbytes = 0


class _RowsCache(Cache):
    def __init__(self, layers: list[CacheLayerMixin]) -> None:
        super().__init__(layers=layers)


class _Layer(CacheLayerMixin):
    is_sliding = False

    def __init__(self, rows: KVRows, index: int) -> None:
        super().__init__()
        self.rows, self.index = rows, index
        self.is_initialized = True

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        """Nothing to do: the buffers are the rows' own."""

    def get_max_length(self) -> int:
        return -1


class _PrefillLayer(_Layer):
    def __init__(self, rows: KVRows, index: int, row: int, begin: int) -> None:
        super().__init__(rows, index)
        self.row, self.begin = row, begin

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        keys, values = self.rows.buffers(self.index, key_states, value_states)
        end = self.begin + key_states.shape[-2]
        keys[self.row, :, self.begin : end] = key_states[0]
        values[self.row, :, self.begin : end] = value_states[0]
        return keys[self.row : self.row + 1, :, :end], values[self.row : self.row + 1, :, :end]

    def get_seq_length(self) -> int:
        return self.begin

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.begin + query_length, 0


@dataclass
class _Step:
    """One decode step's shape, shared by the layers of the one decode cache a `KVRows` hands out."""

    batch: torch.Tensor | None = None  # row indices 0..active-1
    positions: torch.Tensor | None = None  # where each row's new token goes
    width: int = 0  # positions the attention reads (the longest row's, plus the new token)


class _DecodeLayer(_Layer):
    def __init__(self, rows: KVRows, index: int, step: _Step) -> None:
        super().__init__(rows, index)
        self.step = step

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        keys, values = self.rows.buffers(self.index, key_states, value_states)
        step = self.step
        keys[step.batch, :, step.positions] = key_states[:, :, 0]
        values[step.batch, :, step.positions] = value_states[:, :, 0]
        active = key_states.shape[0]
        return keys[:active, :, : step.width], values[:active, :, : step.width]

    def get_seq_length(self) -> int:
        return self.step.width - 1

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.step.width - 1 + query_length, 0


class KVRows:
    """Per-layer KV buffers with one row per session (see the module docstring)."""

    def __init__(self, num_layers: int) -> None:
        self.num_layers = num_layers
        self.keys: list[torch.Tensor | None] = [None] * num_layers
        self.values: list[torch.Tensor | None] = [None] * num_layers
        self.rows: list[_Row] = []
        self.capacity = 0
        self.relayouts = 0  # how often rows were re-allocated (each copies the cached positions once)
        self.swaps = 0  # rows swapped out of a decode batch when they finished early
        self._step = _Step()
        self._decode = _RowsCache([_DecodeLayer(self, i, self._step) for i in range(num_layers)])
        self._index = torch.arange(0)

    # ----- buffers -----

    def buffers(self, layer: int, like_keys: torch.Tensor, like_values: torch.Tensor):
        """Layer `layer`'s buffers, allocated on first use with the shapes the model's KV has."""
        if self.keys[layer] is None:
            shape = (len(self.rows), like_keys.shape[1], self.capacity, like_keys.shape[-1])
            self.keys[layer] = like_keys.new_zeros(shape)
            self.values[layer] = like_values.new_zeros((*shape[:3], like_values.shape[-1]))
        return self.keys[layer], self.values[layer]

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in (*self.keys, *self.values) if t is not None)

    def prefill_cache(self, row: int, begin: int, end: int) -> Cache:
        if end > self.capacity:
            raise ValueError(f"prefill up to position {end} exceeds the reserved capacity {self.capacity}")
        return _RowsCache([_PrefillLayer(self, i, row, begin) for i in range(self.num_layers)])

    def decode_cache(self, positions: torch.Tensor) -> tuple[Cache, torch.Tensor]:
        """The cache for one decode step of rows 0..len(positions)-1, each writing its token at its position, and
        the attention mask ``[rows, width]`` that hides each row's positions past its own."""
        width = int(positions.max()) + 1
        if len(self._index) < max(width, len(positions)) or self._index.device != positions.device:
            self._index = torch.arange(max(self.capacity, width, len(positions)), device=positions.device)
        step = self._step
        step.batch, step.positions, step.width = self._index[: len(positions)], positions, width
        return self._decode, self._index[None, :width] <= positions[:, None]

    # ----- rows -----

    def retire(self, session: str) -> None:
        for row in self.rows:
            if row.session == session and not row.retired:
                row.retired = True

    def set_ids(self, row: int, ids: tuple[int, ...], prefix_length: int) -> None:
        self.rows[row].ids, self.rows[row].prefix_length = ids, prefix_length

    def swap(self, a: int, b: int, length: int) -> None:
        """Exchange rows `a` and `b` (their first `length` positions) in every layer."""
        for buffers in (self.keys, self.values):
            for tensor in buffers:
                if tensor is not None:
                    held = tensor[a, :, :length].clone()
                    tensor[a, :, :length] = tensor[b, :, :length]
                    tensor[b, :, :length] = held
        self.rows[a], self.rows[b] = self.rows[b], self.rows[a]
        self.swaps += 1

    def copy_prefix(self, row: int, prefix: tuple[int, ...], store: PrefixStore) -> int:
        """Fill `row`'s first positions with `prefix`'s KV from another row or the store; how many it filled."""
        size = len(prefix)
        source = next((i for i, r in enumerate(self.rows) if i != row and _holds(r.ids, prefix)), None)
        if source is not None:
            for buffers in (self.keys, self.values):
                for tensor in buffers:
                    if tensor is not None:
                        tensor[row, :, :size] = tensor[source, :, :size]
            return size
        entry = store.take(prefix)
        if entry is None:
            return 0
        for layer, (keys, values) in enumerate(entry):
            own_keys, own_values = self.buffers(layer, keys, values)
            own_keys[row, :, :size] = keys[0]
            own_values[row, :, :size] = values[0]
        return size

    def layout(
        self,
        sessions: list[str],
        targets: list[tuple[int, ...]],
        prefixes: list[tuple[int, ...]],
        room: list[int],
        store: PrefixStore,
    ) -> list[int]:
        """Rows 0..n-1 for `sessions` (n = len(sessions)), with room for `room` more tokens each after `targets`.

        Returns how many leading tokens of each target its row already holds (its own cache from the last step,
        or an adopted released row of the same task prefix); the rest is the caller's to fill.
        """
        old = self.rows
        held = {r.session: i for i, r in enumerate(old) if not r.retired}
        sources: list[int | None] = []
        kept: list[int] = []
        taken: set[int] = set()
        for session, target, prefix in zip(sessions, targets, prefixes, strict=True):
            source, keep = held.get(session), 0
            if source is not None:
                ids = old[source].ids
                if target[: len(ids)] == ids or ids[: len(target)] == target:
                    keep = min(len(ids), len(target))
                elif _holds(ids, prefix) and len(prefix) <= len(target):
                    keep = len(prefix)
            elif prefix and len(prefix) <= len(target):  # adopt a released row that holds this task's prefix
                source = next(
                    (i for i, r in enumerate(old) if r.retired and i not in taken and _holds(r.ids, prefix)), None
                )
                keep = len(prefix) if source is not None else 0
            if source is not None:
                taken.add(source)
            sources.append(source)
            kept.append(keep)
        extra = [i for i, r in enumerate(old) if not r.retired and i not in taken]
        new_rows = [_Row(s, t[:k]) for s, t, k in zip(sessions, targets, kept, strict=True)]
        new_rows += [old[i] for i in extra]
        copies = [(source, keep) for source, keep in zip(sources, kept, strict=True)]
        copies += [(i, len(old[i].ids)) for i in extra]
        need = max([len(t) + r + 1 for t, r in zip(targets, room, strict=True)] + [len(old[i].ids) + 1 for i in extra])
        capacity = -(-need // CAPACITY_STEP) * CAPACITY_STEP
        in_place = (
            len(new_rows) == len(old)
            and all(source == i for i, (source, _) in enumerate(copies))
            and capacity <= self.capacity < capacity + 4 * CAPACITY_STEP
        )
        if in_place:  # every row stays where it is: nothing to move
            self.rows = new_rows
            return kept
        # released rows nobody adopts: their prefix goes to the store unless a kept row holds it or it cannot fit
        kept_ids = [old[s].ids[:k] for s, k in copies if s is not None and k]
        stored: dict[tuple[int, ...], int] = {}
        for i, r in enumerate(old):
            prefix = r.prefix
            if not r.retired or i in taken or not prefix or prefix in store or prefix in stored:
                continue
            if len(prefix) * self.bytes_per_token() > store.max_bytes or any(_holds(ids, prefix) for ids in kept_ids):
                continue
            stored[prefix] = i
        parts: dict[tuple[int, ...], list[LayerKV]] = {p: [] for p in stored}
        for layer in range(self.num_layers):
            keys, values = self.keys[layer], self.values[layer]
            if keys is None or values is None:
                continue
            for prefix, source in stored.items():
                size = len(prefix)
                parts[prefix].append(
                    (keys[source : source + 1, :, :size].clone(), values[source : source + 1, :, :size].clone())
                )
            self.keys[layer] = self._moved(keys, copies, capacity)
            del keys
            self.values[layer] = self._moved(values, copies, capacity)
            del values
        for prefix, kv in parts.items():
            if len(kv) == self.num_layers:
                store.put(prefix, kv)
        self.rows, self.capacity = new_rows, capacity
        self.relayouts += 1
        return kept

    @staticmethod
    def _moved(tensor: torch.Tensor, copies: list[tuple[int | None, int]], capacity: int) -> torch.Tensor:
        fresh = tensor.new_zeros((len(copies), tensor.shape[1], capacity, tensor.shape[3]))
        for row, (source, keep) in enumerate(copies):
            if source is not None and keep:
                fresh[row, :, :keep] = tensor[source, :, :keep]
        return fresh

    def bytes_per_token(self) -> int:
        """KV bytes one token takes in all layers (0 before the first forward)."""
        return sum(t.shape[1] * t.shape[3] * t.element_size() for t in (*self.keys, *self.values) if t is not None)
