"""What one forward writes through: a packed prefill of several rows, and a generate call's decode batch.

Prefill (`pack`, `PackedPrefill`): after an episode's first step, a step prefills only the environment's answer of
each live row. The rows' uncached tokens are cut into `Piece`s and packed, in row order, into forwards of at most
`PREFILL_CHUNK` tokens (a long prompt in chunks, many short answers in one forward), each token at its true
position. A layer's update writes each piece's keys and values where its row keeps them (inside a shared prefix: the
prefix, which only its first row fills; after it: the row's tail), and the attention (`attention.py`) reads each
piece's own row only. Pieces never straddle a row's shared-prefix boundary, and rows go in row order, so a group's
first row fills its prefix before the rows that share it read it.

Decode (`DecodeBatch`): for one generate call, the rows' tails move into *buckets* of rows of similar length, one
padded tensor per bucket and layer, ``[rows, kv_heads, capacity, head_dim]``, all buckets of a layer views of one
storage (a step writes every row's key and value with one indexed write per layer). `plan` cuts the rows into
buckets minimising the padded positions plus `BUCKET_CALL` per bucket (one more attention call per layer), exactly,
by dynamic programming over the rows sorted by length. Each step (`decode_cache`) records one `Part` per bucket with
rows still decoding (one call over its slots; once at most 1/`PER_ROW_SHARE` of them decode, one call per row over
its own tail) and the groups of rows that share a prefix view (the prefix read once per group). A row alone on its
prefix holds the whole row in its slot. `close` copies nothing: each row keeps its slot as its tensors, the room it
did not decode as capacity for the environment's answer, so a call's peak is its buckets, not a second copy.

`give_back` returns the C heap's free pages to the system on CPU (glibc's `malloc_trim(0)`; nothing where the C
library is not glibc): glibc keeps freed blocks below its mmap threshold in heaps that do not shrink past live
blocks, and a call frees tensors of many sizes (docs/benchmarks.md has the peaks measured with and without it).

Not covered: rows joining or leaving a call's slots mid-call (continuous batching), sliding-window layers.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import time
from dataclasses import dataclass

import torch
from transformers.cache_utils import Cache, CacheLayerMixin

PREFILL_CHUNK = 512  # tokens per prefill forward: bounds the activations of a long prompt
CAPACITY_STEP = 128  # a row's tail capacity grows in steps of this many positions (cache.py)
PER_ROW_SHARE = 2  # a bucket whose decoding rows are at most 1/PER_ROW_SHARE of its slots attends per row
BUCKET_CALL = 256  # positions: what one more bucket (one more attention call per layer) is worth in padding


@functools.cache
def _trim():
    """glibc's `malloc_trim`, or None where the C library has none."""
    name = ctypes.util.find_library("c")
    try:
        library = ctypes.CDLL(name)
        trim = library.malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def give_back() -> bool:
    """Return the C heap's free pages to the operating system; True where that could be asked (glibc)."""
    trim = _trim()
    if trim is None:
        return False
    trim(0)
    return True


@dataclass(frozen=True)
class Piece:
    """Positions `begin`..`end`-1 of call row `row`, at `offset` in the packed sequence."""

    row: int
    begin: int
    end: int
    offset: int

    @property
    def size(self) -> int:
        return self.end - self.begin


def pack(work: list[tuple[int, int, int, int]], chunk: int = PREFILL_CHUNK) -> list[list[Piece]]:
    """Forwards of at most `chunk` tokens from `work` = (row, begin, end, shared length) in row order, cut at
    each row's shared-prefix boundary and wherever a forward is full."""
    forwards: list[list[Piece]] = []
    current: list[Piece] = []
    used = 0
    for row, begin, end, shared in work:
        cuts = [shared] if begin < shared < end else []
        position = begin
        for stop in [*cuts, end]:
            while position < stop:
                take = min(stop - position, chunk - used)
                current.append(Piece(row, position, position + take, used))
                position += take
                used += take
                if used == chunk:
                    forwards.append(current)
                    current, used = [], 0
    if current:
        forwards.append(current)
    return forwards


@dataclass
class PieceView:
    """What one piece's attention reads in one layer: the shared prefix's keys and values (causal when the piece
    is inside the prefix, whole after it) and the tail's (causal), each None when the piece reads none."""

    prefix: tuple[torch.Tensor, torch.Tensor] | None = None
    tail: tuple[torch.Tensor, torch.Tensor] | None = None
    prefix_causal: bool = False
    tail_first: int = 0  # the true position of the tail's first key


class _OwnedLayer(CacheLayerMixin):
    """A cache layer whose tensors belong to its `owner` (a packed prefill or a decode batch): nothing to
    allocate, no fixed length; `update` hands the layer's keys and values to the owner."""

    is_sliding = False

    def __init__(self, owner, index: int) -> None:
        super().__init__()
        self.owner, self.index = owner, index
        self.is_initialized = True

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        """Nothing to do: the tensors are the owner's."""

    def get_max_length(self) -> int:
        return -1


class _PackedLayer(_OwnedLayer):
    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        self.owner.write(self.index, key_states, value_states)
        return key_states, value_states  # the pieces' attention reads the rows themselves (attention.py)

    def get_seq_length(self) -> int:
        return 0

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return query_length, 0


class PackedPrefill(Cache):
    """One packed forward's pieces over `kv_rows`' rows (see the module docstring)."""

    def __init__(self, kv_rows, pieces: list[Piece]) -> None:
        super().__init__(layers=[_PackedLayer(self, i) for i in range(kv_rows.num_layers)])
        self.kv_rows, self.pieces = kv_rows, pieces
        self.views: list[PieceView] = []  # the current layer's, one per piece
        self._masks: dict[tuple[Piece, int, torch.dtype], torch.Tensor] = {}

    def write(self, layer: int, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        """Every piece's keys and values into its row (the shared prefix it fills, or its tail); the views that
        the layer's attention reads."""
        rows = self.kv_rows.rows
        views = []
        for piece in self.pieces:
            row = rows[piece.row]
            n = row.shared_length
            keys_in = key_states[:, :, piece.offset : piece.offset + piece.size]
            values_in = value_states[:, :, piece.offset : piece.offset + piece.size]
            view = PieceView()
            if piece.begin < n:  # inside the shared prefix: its first row fills it (pack cuts at the boundary)
                keys, values = row.shared.tensors(layer, keys_in, values_in)
                keys[:, :, piece.begin : piece.end] = keys_in
                values[:, :, piece.begin : piece.end] = values_in
                view.prefix = (keys[:, :, : piece.end], values[:, :, : piece.end])
                view.prefix_causal = True
            else:
                if n:
                    view.prefix = row.shared.view(layer, n)
                keys, values = self.kv_rows.tensors(row, layer, keys_in, values_in)
                keys[:, :, piece.begin - n : piece.end - n] = keys_in
                values[:, :, piece.begin - n : piece.end - n] = values_in
                view.tail = (keys[:, :, : piece.end - n], values[:, :, : piece.end - n])
                view.tail_first = n
            views.append(view)
        self.views = views

    def mask(self, piece: Piece, first: int, like: torch.Tensor, group: int) -> torch.Tensor:
        """[1, 1, group * size, end - first] additive, made once per forward: query at position begin + i (each
        of the `group` query heads folded on a KV head in turn) sees keys at positions first..begin + i."""
        key = (piece, first, like.dtype, group)
        mask = self._masks.get(key)
        if mask is None:
            device = like.device
            queries = torch.arange(piece.begin, piece.end, device=device)[:, None]
            keys = torch.arange(first, piece.end, device=device)[None, :]
            mask = torch.zeros((piece.size, piece.end - first), dtype=like.dtype, device=device)
            mask = mask.masked_fill_(keys > queries, float("-inf")).repeat(group, 1)[None, None]
            self._masks[key] = mask
        return mask


def rounded(positions: int) -> int:
    """`positions` rounded up to a whole number of `CAPACITY_STEP`s: the tail capacity that holds them."""
    return -(-positions // CAPACITY_STEP) * CAPACITY_STEP


def plan(needs: list[int], call: int = BUCKET_CALL) -> list[list[int]]:
    """Slots 0..n-1 (slot s needs `needs[s]` positions) cut into buckets (each listed in slot order, the buckets
    longest first) minimising the padded positions (a bucket's rows times its longest need) plus `call` per
    bucket. Exact: a best cut takes runs of the slots sorted by need (dynamic programming, n^2 / 2 steps)."""
    order = sorted(range(len(needs)), key=lambda s: -needs[s])
    cost = [0] + [float("inf")] * len(order)  # cost[k]: the best cut of the k longest slots
    cut = [0] * (len(order) + 1)
    for k in range(1, len(order) + 1):
        for i in range(k):  # the last bucket holds order[i:k], padded to order[i]'s need
            value = cost[i] + (k - i) * needs[order[i]] + call
            if value < cost[k]:
                cost[k], cut[k] = value, i
    buckets, k = [], len(order)
    while k:
        buckets.append(sorted(order[cut[k] : k]))
        k = cut[k]
    return buckets[::-1]


@dataclass(frozen=True)
class PrefixGroup:
    """Batch rows whose first `length` positions are one shared prefix's: rows[start:stop] or rows[index]."""

    shared: object  # the SharedPrefix (cache.py), read in place
    length: int
    start: int
    stop: int
    index: torch.Tensor | None  # the batch rows when they are not contiguous


@dataclass
class Bucket:
    """Slots padded to one capacity: views ``[len(slots), kv_heads, capacity, dim]`` of the call's storage."""

    slots: list[int]  # the call's slots, in order: slot slots[j] is the bucket's row j
    capacity: int
    offset: int  # positions of the storage before it (the buckets before it: rows x capacity each)


@dataclass
class Part:
    """One bucket's attention in one step: its batch rows still decoding (`rows`, at bucket rows `local`)."""

    bucket: int
    rows: list[int]  # batch rows
    local: list[int]  # their rows in the bucket
    width: int  # tail positions the call reads per slot (the longest decoding row's)
    per_row: bool  # one call per decoding row over its own tail
    direct: bool  # batch rows rows[0]..rows[-1] are exactly the bucket's rows in order (no gather, no scatter)
    row_index: torch.Tensor | None = None
    local_index: torch.Tensor | None = None
    lengths: torch.Tensor | None = None  # every bucket slot's length this step (the mask)


class _DecodeCache(Cache):
    def __init__(self, layers: list[CacheLayerMixin]) -> None:
        super().__init__(layers=layers)


class _DecodeLayer(_OwnedLayer):
    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        start = time.perf_counter()
        self.owner.write(self.index, key_states, value_states)
        self.owner.write_seconds += time.perf_counter() - start
        return key_states, value_states  # the rows' attention reads the batch and the prefixes (attention.py)

    def get_seq_length(self) -> int:
        return max(self.owner.positions, default=0)

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.get_seq_length() + query_length, 0


class DecodeBatch:
    """The call's tails in buckets (slot i for the call's row i), and the current step (module docstring)."""

    def __init__(self, rows: list, room: list[int], num_layers: int, call: int = BUCKET_CALL) -> None:
        self.rows = list(rows)  # by slot: the `_Row`s of the call
        # a row alone on its prefix (100 tasks x 1 rollout) gains nothing from reading it apart: its slot holds
        # the whole row, the prefix moved in (its tensors let go until `close` hands the slot's view back)
        self.whole = [_alone(row) for row in self.rows]
        self.offsets = [0 if whole else row.shared_length for row, whole in zip(self.rows, self.whole, strict=True)]
        self.tails = [len(row.ids) - o for row, o in zip(self.rows, self.offsets, strict=True)]  # positions held
        needs = [t + r + 1 for t, r in zip(self.tails, room, strict=True)]
        self.buckets: list[Bucket] = []
        self.where: list[tuple[int, int]] = [(0, 0)] * len(self.rows)  # slot -> (bucket, its row in the bucket)
        offset = 0
        for slots in plan(needs, call):
            capacity = max(needs[s] for s in slots)
            for j, s in enumerate(slots):
                self.where[s] = (len(self.buckets), j)
            self.buckets.append(Bucket(slots, capacity, offset))
            offset += len(slots) * capacity
        self.size = offset  # positions in each layer's storage
        self.keys: list[torch.Tensor | None] = [None] * num_layers  # per layer [kv_heads * size, dim]
        self.values: list[torch.Tensor | None] = [None] * num_layers
        self.write_seconds = 0.0
        self.active = False  # a step is under way (prefill forwards use the model's own attention)
        self.positions: list[int] = []
        self.parts: list[Part] = []
        self.groups: list[PrefixGroup] = []
        self.identity = False  # one bucket, batch row i is slot i for every slot (no gather or scatter needed)
        self.per_row = False  # every part attends row by row (few rows still decode)
        self.slots: list[int] = []  # the step's slot of each batch row
        self.read = 0  # KV positions this step's attention reads (each prefix view once, the tails padded)
        self._slot_place = None  # per batch row: its slot's first position in the storage, its tail, its capacity
        self._write_index: torch.Tensor | None = None
        self._masks: dict[tuple[int, torch.dtype], torch.Tensor] = {}
        self._cache = _DecodeCache([_DecodeLayer(self, i) for i in range(num_layers)])

    def decode_cache(self, positions: list[int], slots: list[int], device: torch.device) -> tuple[Cache, torch.Tensor]:
        """The cache for one step: batch row i is slot `slots[i]`, writing its token at true position
        `positions[i]`."""
        rows = self.rows
        tail_positions = [p - self.offsets[s] for p, s in zip(positions, slots, strict=True)]
        for s, t in zip(slots, tail_positions, strict=True):
            capacity = self.buckets[self.where[s][0]].capacity
            if t != self.tails[s] or t >= capacity:
                raise RuntimeError(f"slot {s} writes tail position {t}, holds {self.tails[s]} of {capacity}")
            self.tails[s] = t + 1
        self.positions = list(positions)
        self.slots = list(slots)
        count = len(slots)
        members: dict[int, list[int]] = {}
        for i, s in enumerate(slots):
            members.setdefault(self.where[s][0], []).append(i)
        # one packed copy to the device: where each row writes, then each padded part's rows and lengths
        capacities = [self.buckets[self.where[s][0]].capacity for s in slots]
        starts = [
            self.buckets[self.where[s][0]].offset + self.where[s][1] * c
            for s, c in zip(slots, capacities, strict=True)
        ]
        packed = [*starts, *tail_positions, *capacities]
        self.parts, spans = [], []
        for b in sorted(members):
            bucket, batch_rows = self.buckets[b], members[b]
            local = [self.where[slots[i]][1] for i in batch_rows]
            width = max(self.tails[slots[i]] for i in batch_rows)  # rows that finished do not widen the step
            # at most 1/PER_ROW_SHARE of its slots still decoding (or a bucket of one): one call per row over its
            # own tail beats the padded call (benchmarks/decode_attention.py: the crossing lies above half)
            per_row = PER_ROW_SHARE * len(batch_rows) <= len(bucket.slots) or len(bucket.slots) == 1
            direct = local == list(range(len(bucket.slots))) and batch_rows == list(
                range(batch_rows[0], batch_rows[0] + len(batch_rows))
            )
            part = Part(b, batch_rows, local, width, per_row, direct)
            if not per_row:
                spans.append((part, len(packed)))
                packed += [*batch_rows, *local, *(self.tails[s] for s in bucket.slots)]
            self.parts.append(part)
        on_device = torch.tensor(packed, device=device)
        self._slot_place = (on_device[:count], on_device[count : 2 * count], on_device[2 * count : 3 * count])
        for part, at in spans:
            n, m = len(part.rows), len(self.buckets[part.bucket].slots)
            part.row_index, part.local_index = on_device[at : at + n], on_device[at + n : at + 2 * n]
            part.lengths = on_device[at + 2 * n : at + 2 * n + m]
        self._write_index = None
        self._masks = {}
        self.identity = len(self.buckets) == 1 and count == len(rows) and slots == list(range(count))
        self.per_row = all(p.per_row for p in self.parts)
        self.groups = _groups(
            [(None, 0) if self.whole[s] else (rows[s].shared, rows[s].shared_length) for s in slots], device
        )
        tails = sum(
            sum(self.tails[slots[i]] for i in p.rows) if p.per_row else len(self.buckets[p.bucket].slots) * p.width
            for p in self.parts
        )
        self.read = sum(g.length for g in self.groups) + tails
        self.active = True
        return self._cache, torch.ones((count, 1, 1, 1), dtype=torch.bool, device=device)

    def write(self, layer: int, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        """This step's keys and values ([batch, kv_heads, 1, dim]) into their slots, the layer's storage made
        first: one indexed write per layer for all buckets."""
        if self.keys[layer] is None:
            self._gather(layer, key_states, value_states)
        if self._write_index is None:  # the storage's row (of `dim` values) of each (batch row, head)
            kv_heads = key_states.shape[1]
            starts, tails, capacities = self._slot_place
            heads = torch.arange(kv_heads, device=starts.device)
            index = (kv_heads * starts + tails)[:, None] + heads[None, :] * capacities[:, None]
            self._write_index = index.reshape(-1)
        self.keys[layer].index_copy_(0, self._write_index, key_states[:, :, 0].reshape(-1, key_states.shape[-1]))
        self.values[layer].index_copy_(0, self._write_index, value_states[:, :, 0].reshape(-1, value_states.shape[-1]))

    def bucket_view(self, layer: int, b: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Bucket `b` of `layer`, in place: [rows, kv_heads, capacity, dim] keys and values."""
        bucket = self.buckets[b]
        keys, values = self.keys[layer], self.values[layer]
        kv_heads = keys.shape[0] // self.size
        first, stop = kv_heads * bucket.offset, kv_heads * (bucket.offset + len(bucket.slots) * bucket.capacity)
        shape = (len(bucket.slots), kv_heads, bucket.capacity)
        return keys[first:stop].view(*shape, keys.shape[-1]), values[first:stop].view(*shape, values.shape[-1])

    def _gather(self, layer: int, like_keys: torch.Tensor, like_values: torch.Tensor) -> None:
        """The layer's rows into one zeroed storage (padding must be finite: it is masked, then multiplied by 0)."""
        kv_heads = like_keys.shape[1]
        if like_values.shape[1] != kv_heads:
            raise ValueError("the decode batch needs as many value heads as key heads")
        self.keys[layer] = like_keys.new_zeros((kv_heads * self.size, like_keys.shape[-1]))
        self.values[layer] = like_values.new_zeros((kv_heads * self.size, like_values.shape[-1]))
        for b, bucket in enumerate(self.buckets):
            keys, values = self.bucket_view(layer, b)
            for j, slot in enumerate(bucket.slots):
                row = self.rows[slot]
                start, held = (row.shared_length if self.whole[slot] else 0), row.tail_length
                if start:
                    shared = row.shared
                    keys[j, :, :start] = shared.keys[layer][0]
                    values[j, :, :start] = shared.values[layer][0]
                    shared.keys[layer] = shared.values[layer] = None  # moved: its view comes back at `close`
                if held and row.keys and row.keys[layer] is not None:
                    keys[j, :, start : start + held] = row.keys[layer][0, :, :held]
                    values[j, :, start : start + held] = row.values[layer][0, :, :held]
                if row.keys:
                    row.keys[layer] = row.values[layer] = None  # let go (its block goes with its last layer)
        if like_keys.device.type == "cpu":  # what the rows let go back to the system before the next layer's copy
            give_back()

    @property
    def kv_heads(self) -> int:
        return self.keys[0].shape[0] // self.size

    def tail_of(self, layer: int, slot: int) -> tuple[torch.Tensor, torch.Tensor]:
        """One slot's tail of `layer` over the positions it holds this step, in place: [1, kv_heads, held, dim]."""
        b, j = self.where[slot]
        keys, values = self.bucket_view(layer, b)
        held = self.tails[slot]
        return keys[j : j + 1, :, :held], values[j : j + 1, :, :held]

    def tails_of(self, layer: int, part: Part) -> tuple[torch.Tensor, torch.Tensor]:
        """A part's bucket of `layer` over this step's width, in place: [slots, kv_heads, width, dim]."""
        keys, values = self.bucket_view(layer, part.bucket)
        return keys[:, :, : part.width], values[:, :, : part.width]

    def mask(self, part: Part, dtype: torch.dtype) -> torch.Tensor:
        """[slots, 1, 1, width] for a part's bucket: 0 where a slot holds a position, -inf past its length."""
        key = (part.bucket, dtype)
        mask = self._masks.get(key)
        if mask is None:
            held = torch.arange(part.width, device=part.lengths.device) < part.lengths[:, None]
            mask = torch.zeros(held.shape, dtype=dtype, device=held.device).masked_fill_(~held, float("-inf"))
            mask = self._masks[key] = mask[:, None, None, :]
        return mask

    def close(self, kv_rows) -> None:
        """Each row keeps its slot as its tensors (views of the call's storage: nothing copied, see the module
        docstring), the room it did not use as capacity. A row holds the positions its `ids` cover (set by the
        caller before closing)."""
        self.active = False
        if any(k is None for k in self.keys):  # no step completed a forward: the rows still hold their tails
            return
        layers = len(self.keys)
        for b, bucket in enumerate(self.buckets):
            views = [self.bucket_view(layer, b) for layer in range(layers)]
            for j, slot in enumerate(bucket.slots):
                row = self.rows[slot]
                start = row.shared_length if self.whole[slot] else 0
                row.capacity = bucket.capacity - start
                row.keys = [keys[j : j + 1, :, start:] for keys, _ in views]
                row.values = [values[j : j + 1, :, start:] for _, values in views]
                if start:  # the prefix: the slot's first positions, read in place from now on
                    row.shared.keys = [keys[j : j + 1, :, :start] for keys, _ in views]
                    row.shared.values = [values[j : j + 1, :, :start] for _, values in views]
        self.keys = [None] * len(self.keys)
        self.values = [None] * len(self.values)


def _alone(row) -> bool:
    """The row is the only holder of its whole shared prefix (or has none): nobody else reads it this call."""
    shared = row.shared
    return shared is None or (shared.refs == 1 and row.shared_length == len(shared) and shared.keys[0] is not None)


def _groups(views: list[tuple[object, int]], device: torch.device) -> list[PrefixGroup]:
    """The batch rows of each distinct (shared prefix, length) view, in order of first appearance."""
    members: dict[tuple[int, int], list[int]] = {}
    lookup: dict[tuple[int, int], object] = {}
    for i, (shared, length) in enumerate(views):
        if shared is not None and length > 0:
            key = (id(shared), length)
            members.setdefault(key, []).append(i)
            lookup[key] = shared
    groups = []
    for key, rows in members.items():
        start, stop = rows[0], rows[-1] + 1
        contiguous = stop - start == len(rows)
        index = None if contiguous else torch.tensor(rows, device=device)
        groups.append(PrefixGroup(lookup[key], key[1], start, stop, index))
    return groups
