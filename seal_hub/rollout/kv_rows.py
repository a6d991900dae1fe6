"""The KV cache of every live episode, one row per episode, each row sized to its own sequence; and the prefix store.

Each row owns, per model layer, keys and values shaped ``[1, kv_heads, capacity, head_dim]``, where the capacity
is the row's own length rounded up to `CAPACITY_STEP` positions (plus what the current call will decode), not the
longest row's: rows of a 2.7k-token task and a 4.4k-token task no longer reserve 4.4k positions each. Row i's
tokens sit at positions 0..n-1, which are also their true positions (RoPE). Because rows differ in length, a
decode step cannot hand the model one ``[rows, heads, width, dim]`` tensor; the attention of a decode step runs
per row over exactly that row's positions (`seal_hub.rollout.rows_attention`), so nothing is masked, padded or
zero-filled. The model gets `transformers` caches that write in place:

- `prefill_cache(row, begin, end)`: a batch-of-one cache that writes positions begin..end-1 of one row (the
  model's own attention runs over the row's first `end` positions);
- `decode_cache(positions, device)`: the first `len(positions)` rows, each writing one token at its own position (a row
  that reaches its capacity grows by `CAPACITY_STEP` first, one layer at a time).

`layout` orders a call's sessions as rows 0..n-1 (then sessions held but not requested) and makes room for the
tokens the call adds; rows are Python objects, so ordering them, swapping them or dropping them copies nothing.
A row grows (one layer re-allocated at a time, so the transient is one layer of one row) only when its sequence
outgrows its capacity. Released rows that nobody adopts leave their task prefix in the `PrefixStore`, bounded by
bytes (least recently used out first), whose entries are handed over (not copied and kept) to the row that takes
them: one copy of each token's KV.

Not covered: sharing one prefix copy between rows (each row holds its own), sliding-window eviction (sliding
layers see the whole row), and linear attention / state-space layers (their models need their own cache classes).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field

import torch
from transformers.cache_utils import Cache, CacheLayerMixin

CAPACITY_STEP = 128  # a row's capacity grows in steps of this many positions
SHRINK_SLACK = 4 * CAPACITY_STEP  # a row this much larger than it needs is re-allocated smaller
BLOCK_BYTES = 40 * 2**20  # a row's KV is allocated in blocks of layers of at least this size (see `_allocate`)
LayerKV = tuple[torch.Tensor, torch.Tensor]  # keys, values shaped [1, kv_heads, tokens, head_dim]


def num_layers(model) -> int:
    """How many cache layers a model's forward will ask for."""
    config = model.config
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    count = getattr(text, "num_hidden_layers", None)
    if not isinstance(count, int) or count < 1:
        raise ValueError(f"cannot tell how many layers {type(model).__name__} has (config.num_hidden_layers)")
    return count


def _rounded(positions: int) -> int:
    return -(-positions // CAPACITY_STEP) * CAPACITY_STEP


@dataclass
class _Row:
    session: str
    ids: tuple[int, ...]  # the tokens whose KV the row holds, at positions 0..len-1
    prefix_length: int = 0
    retired: bool = False  # released: kept only as a source of its prefix until the next layout
    capacity: int = 0  # positions its tensors hold (they are allocated at the first write)
    keys: list[torch.Tensor | None] = field(default_factory=list)  # per layer [1, kv_heads, capacity, head_dim]
    values: list[torch.Tensor | None] = field(default_factory=list)

    @property
    def prefix(self) -> tuple[int, ...]:
        return self.ids[: self.prefix_length] if 0 < self.prefix_length <= len(self.ids) else ()

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in (*self.keys, *self.values) if t is not None)


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
        """Nothing to do: the tensors are the rows' own."""

    def get_max_length(self) -> int:
        return -1


class _PrefillLayer(_Layer):
    def __init__(self, rows: KVRows, index: int, row: int, begin: int) -> None:
        super().__init__(rows, index)
        self.row, self.begin = row, begin

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        row = self.rows.rows[self.row]
        keys, values = self.rows.tensors(row, self.index, key_states, value_states)
        end = self.begin + key_states.shape[-2]
        keys[:, :, self.begin : end] = key_states
        values[:, :, self.begin : end] = value_states
        return keys[:, :, :end], values[:, :, :end]

    def get_seq_length(self) -> int:
        return self.begin

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.begin + query_length, 0


@dataclass
class DecodeStep:
    """One decode step's rows and where each writes its token (shared by the layers of the one decode cache)."""

    active: bool = False  # a decode step is under way (prefill forwards use the model's own attention)
    rows: list[_Row] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)


class _DecodeLayer(_Layer):
    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        start = time.perf_counter()
        step, layer = self.rows.step, self.index
        for i, (row, position) in enumerate(zip(step.rows, step.positions, strict=True)):
            keys, values = self.rows.tensors(row, layer, key_states, value_states)
            keys[0, :, position] = key_states[i, :, 0]
            values[0, :, position] = value_states[i, :, 0]
        self.rows.write_seconds += time.perf_counter() - start
        return key_states, value_states  # the rows' attention reads the rows themselves (rows_attention)

    def get_seq_length(self) -> int:
        return max(self.rows.step.positions, default=0)

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.get_seq_length() + query_length, 0


class KVRows:
    """Per-row, per-layer KV tensors, one row per session (see the module docstring)."""

    def __init__(self, num_layers: int) -> None:
        self.num_layers = num_layers
        self.rows: list[_Row] = []
        self.resizes = 0  # how often a row was re-allocated (each copies that row's cached positions once)
        self.swaps = 0  # rows swapped out of a decode batch when they finished early
        self.write_seconds = 0.0  # decode steps' KV writes, which run inside the model's forward
        self.step = DecodeStep()
        self._decode = _RowsCache([_DecodeLayer(self, i) for i in range(num_layers)])

    # ----- tensors -----

    def tensors(self, row: _Row, layer: int, like_keys: torch.Tensor, like_values: torch.Tensor):
        """`row`'s tensors of `layer`, allocated on first use with the shapes the model's KV has."""
        if not row.keys:
            row.keys, row.values = [None] * self.num_layers, [None] * self.num_layers
        if row.keys[layer] is None:
            shape = (like_keys.shape[1], row.capacity, like_keys.shape[-1])
            if like_values.shape[1] != shape[0] or like_values.shape[-1] != shape[2]:  # keys and values differ
                row.keys[layer] = like_keys.new_empty((1, *shape))
                row.values[layer] = like_values.new_empty((1, shape[0], row.capacity, like_values.shape[-1]))
            else:
                self._allocate(row, layer, like_keys, shape)
        return row.keys[layer], row.values[layer]

    def _allocate(self, row: _Row, first: int, like: torch.Tensor, shape: tuple[int, int, int]) -> None:
        """One block for the keys and values of `first` and the next unallocated layers, `BLOCK_BYTES` or more
        (all layers when the row is small): blocks that large are mapped and unmapped whole by the allocator, so a
        row that grows or leaves gives its memory back instead of leaving holes between other rows' tensors."""
        per_layer = 2 * shape[0] * shape[1] * shape[2] * like.element_size()
        blocks = max(1, self.num_layers * per_layer // BLOCK_BYTES)  # equal blocks of at least BLOCK_BYTES each
        count = 1
        while (
            count < -(-self.num_layers // blocks)
            and first + count < self.num_layers
            and row.keys[first + count] is None
        ):
            count += 1
        block = like.new_empty((count, 2, *shape))
        for i in range(count):
            row.keys[first + i], row.values[first + i] = block[i, 0:1], block[i, 1:2]

    def _fit(self, row: _Row, need: int, keep: int) -> None:
        """Room for `need` positions: grown when short, shrunk when far larger (an adopted row that was longer)."""
        if need > row.capacity or row.capacity > _rounded(need) + SHRINK_SLACK:
            self._resize(row, _rounded(need), keep)

    def _grow(self, row: _Row, capacity: int, keep: int) -> None:
        if capacity > row.capacity:
            self._resize(row, _rounded(capacity), keep)

    def _resize(self, row: _Row, capacity: int, keep: int) -> None:
        """Re-allocate `row` with `capacity` positions, keeping its first `keep` (one block of layers at a time)."""
        row.capacity = capacity
        if not any(t is not None for t in row.keys):
            return
        old_keys, old_values = row.keys, row.values
        row.keys, row.values = [None] * self.num_layers, [None] * self.num_layers
        for layer in range(self.num_layers):
            keys, values = old_keys[layer], old_values[layer]
            if keys is None:
                continue
            own_keys, own_values = self.tensors(row, layer, keys, values)
            own_keys[:, :, :keep] = keys[:, :, :keep]
            own_values[:, :, :keep] = values[:, :, :keep]
            old_keys[layer] = old_values[layer] = None  # the old block goes once its last layer is copied
            del keys, values
        self.resizes += 1

    @property
    def nbytes(self) -> int:
        return sum(row.nbytes for row in self.rows)

    def prefill_cache(self, row: int, begin: int, end: int) -> Cache:
        if end > self.rows[row].capacity:
            raise ValueError(f"prefill up to position {end} exceeds the reserved capacity {self.rows[row].capacity}")
        self.step.active = False
        return _RowsCache([_PrefillLayer(self, i, row, begin) for i in range(self.num_layers)])

    def decode_cache(self, positions: list[int], device: torch.device) -> tuple[Cache, torch.Tensor]:
        """The cache for one decode step of rows 0..len(positions)-1, each writing its token at its position, and
        a placeholder 4D attention mask (each row's attention reads exactly its own positions: nothing to hide)."""
        step = self.step
        step.positions = list(positions)
        step.rows = self.rows[: len(step.positions)]
        for row, position in zip(step.rows, step.positions, strict=True):
            if position >= row.capacity:  # decoding past the reserved room: grow by a step
                self._grow(row, position + CAPACITY_STEP, position)
        step.active = True
        return self._decode, torch.ones((len(step.positions), 1, 1, 1), dtype=torch.bool, device=device)

    def attention_views(self, layer: int) -> list[LayerKV]:
        """Each decoding row's keys and values of `layer` over its positions, the token just written included."""
        step = self.step
        return [
            (row.keys[layer][:, :, : position + 1], row.values[layer][:, :, : position + 1])
            for row, position in zip(step.rows, step.positions, strict=True)
        ]

    # ----- rows -----

    def retire(self, session: str) -> None:
        for row in self.rows:
            if row.session == session and not row.retired:
                row.retired = True

    def set_ids(self, row: int, ids: tuple[int, ...], prefix_length: int) -> None:
        self.rows[row].ids, self.rows[row].prefix_length = ids, prefix_length

    def swap(self, a: int, b: int, length: int = 0) -> None:
        """Exchange rows `a` and `b` (`length` is not needed: rows own their tensors, nothing is copied)."""
        self.rows[a], self.rows[b] = self.rows[b], self.rows[a]
        self.swaps += 1

    def copy_prefix(self, row: int, prefix: tuple[int, ...], store: PrefixStore) -> int:
        """Fill `row`'s first positions with `prefix`'s KV from another row or the store; how many it filled."""
        size, target = len(prefix), self.rows[row]
        source = next((r for i, r in enumerate(self.rows) if i != row and r.keys and _holds(r.ids, prefix)), None)
        if source is not None:
            for layer in range(self.num_layers):
                if source.keys[layer] is not None:
                    keys, values = self.tensors(target, layer, source.keys[layer], source.values[layer])
                    keys[:, :, :size] = source.keys[layer][:, :, :size]
                    values[:, :, :size] = source.values[layer][:, :, :size]
            return size
        entry = store.take(prefix)
        if entry is None:
            return 0
        for layer in range(len(entry)):
            keys, values = entry[layer]
            entry[layer] = None  # each layer of the entry is freed as soon as it is copied in
            own_keys, own_values = self.tensors(target, layer, keys, values)
            own_keys[:, :, :size] = keys
            own_values[:, :, :size] = values
            del keys, values
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
        held = {r.session: r for r in old if not r.retired}
        new_rows: list[_Row] = []
        kept: list[int] = []
        taken: set[int] = set()
        for session, target, prefix, extra in zip(sessions, targets, prefixes, room, strict=True):
            row, keep = held.get(session), 0
            if row is not None:
                ids = row.ids
                if target[: len(ids)] == ids or ids[: len(target)] == target:
                    keep = min(len(ids), len(target))
                elif _holds(ids, prefix) and len(prefix) <= len(target):
                    keep = len(prefix)
            elif prefix and len(prefix) <= len(target):  # adopt a released row that holds this task's prefix
                row = next((r for r in old if r.retired and id(r) not in taken and _holds(r.ids, prefix)), None)
                keep = len(prefix) if row is not None else 0
            if row is None:
                row = _Row(session, ())
            taken.add(id(row))
            row.session, row.ids, row.retired = session, target[:keep], False
            # room for the prefill and a first stretch of decoding; decoding past it grows the row
            self._fit(row, len(target) + min(extra, CAPACITY_STEP) + 1, keep)
            new_rows.append(row)
            kept.append(keep)
        extra_rows = [r for r in old if not r.retired and id(r) not in taken]
        kept_ids = [r.ids for r in new_rows + extra_rows]
        for r in old:  # released rows nobody adopts: their prefix goes to the store unless a live row holds it
            if not r.retired or id(r) in taken:
                continue
            prefix = r.prefix
            if (
                prefix
                and prefix not in store
                and r.keys
                and all(t is not None for t in r.keys)
                and len(prefix) * self.bytes_per_token() <= store.max_bytes
                and not any(_holds(ids, prefix) for ids in kept_ids)
            ):
                store.put(prefix, self._detach_prefix(r, len(prefix)))
            r.keys, r.values = [], []
        self.rows = new_rows + extra_rows
        return kept

    @staticmethod
    def _detach_prefix(row: _Row, size: int) -> list[LayerKV]:
        """The row's first `size` positions as exact-size tensors, freeing the row's own tensors layer by layer."""
        out = []
        for layer in range(len(row.keys)):
            keys, values = row.keys[layer], row.values[layer]
            row.keys[layer] = row.values[layer] = None
            out.append((keys[:, :, :size].clone(), values[:, :, :size].clone()))
            del keys, values
        return out

    def bytes_per_token(self) -> int:
        """KV bytes one token takes in all layers (0 before the first forward)."""
        for row in self.rows:
            if row.keys and all(t is not None for t in row.keys):
                return sum(t.shape[1] * t.shape[3] * t.element_size() for t in (*row.keys, *row.values))
        return 0
