"""One generate call's decode steps: the rows' tails in one padded tensor per layer, and each step's groups.

`KVRows` keeps a row as a reference to its task's shared prefix plus its own tail (`seal_hub.rollout.kv_rows`).
A decode step wants few, big attention calls, so for the length of one generate call `DecodeBatch` moves the
call's tails into one tensor per layer, ``[rows, kv_heads, capacity, head_dim]`` (capacity: the longest tail plus
what the call may decode; each layer's copy made at the first step, the rows' own tail tensors freed as they are
copied), and `close` moves them back, each sized to its own tail. Row i of the call keeps slot i while rows that
finished leave the forward's batch (its tail stays where it is: nothing is copied when rows swap).

Each step (`decode_cache`) writes every decoding row's new key and value into its slot with one indexed write
per layer, and records for the attention (`seal_hub.rollout.rows_attention`): the tails' width this step and the
mask of each slot's length (one tail call per layer over all slots, finished ones riding along, until at most
half the slots still decode: then one call per row left, over its own tail), and the groups
of batch rows that share a prefix view (one prefix call per group per layer, the prefix read in place once).

A row that is the only holder of its task prefix (the evaluation's 100 tasks x 1 rollout) gains nothing from
reading the prefix apart: its slot holds the whole row (the prefix moved in at the first step, its own tensors
freed, and moved back by `close`), so a call of such rows runs ONE attention call per layer over all of them.

The design choice: the tails of a call are short next to the prefixes they follow (a completion and an
environment answer after a prompt of thousands of tokens), so one copy in and one out per call buys in-place
batched reads at every step. Not covered: rows joining or leaving the call's slots mid-call (continuous
batching), and sliding-window layers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from transformers.cache_utils import Cache, CacheLayerMixin

CAPACITY_STEP = 128  # a row's tail capacity grows in steps of this many positions (kv_rows)
PER_ROW_SHARE = 2  # a step whose decoding rows are at most 1/PER_ROW_SHARE of the call's slots attends per row


def rounded(positions: int) -> int:
    """`positions` rounded up to a whole number of `CAPACITY_STEP`s: the tail capacity that holds them."""
    return -(-positions // CAPACITY_STEP) * CAPACITY_STEP


@dataclass(frozen=True)
class PrefixGroup:
    """Batch rows whose first `length` positions are one shared prefix's: rows[start:stop] or rows[index]."""

    shared: object  # the SharedPrefix (kv_prefix), read in place
    length: int
    start: int
    stop: int
    index: torch.Tensor | None  # the batch rows when they are not contiguous


class _DecodeCache(Cache):
    def __init__(self, layers: list[CacheLayerMixin]) -> None:
        super().__init__(layers=layers)


class _DecodeLayer(CacheLayerMixin):
    is_sliding = False

    def __init__(self, batch: DecodeBatch, index: int) -> None:
        super().__init__()
        self.batch, self.index = batch, index
        self.is_initialized = True

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        """Nothing to do: the tensors are the batch's own."""

    def get_max_length(self) -> int:
        return -1

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        start = time.perf_counter()
        self.batch.write(self.index, key_states, value_states)
        self.batch.write_seconds += time.perf_counter() - start
        return key_states, value_states  # the rows' attention reads the batch and the prefixes (rows_attention)

    def get_seq_length(self) -> int:
        return max(self.batch.positions, default=0)

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.get_seq_length() + query_length, 0


class DecodeBatch:
    """The call's tails, slot i for the call's row i, and the current step (see the module docstring)."""

    def __init__(self, rows: list, room: list[int], num_layers: int) -> None:
        self.rows = list(rows)  # by slot: the `_Row`s of the call
        # a row alone on its prefix (100 tasks x 1 rollout) gains nothing from reading it apart: its slot holds
        # the whole row, the prefix moved in (not copied: its tensors are freed until `close` moves it back)
        self.whole = [_alone(row) for row in self.rows]
        self.offsets = [0 if whole else row.shared_length for row, whole in zip(self.rows, self.whole, strict=True)]
        self.tails = [len(row.ids) - o for row, o in zip(self.rows, self.offsets, strict=True)]  # positions held
        self.capacity = max(t + r + 1 for t, r in zip(self.tails, room, strict=True))
        self.keys: list[torch.Tensor | None] = [None] * num_layers  # per layer [slots, kv_heads, capacity, dim]
        self.values: list[torch.Tensor | None] = [None] * num_layers
        self.write_seconds = 0.0
        self.active = False  # a step is under way (prefill forwards use the model's own attention)
        self.positions: list[int] = []
        self.width = 0  # tail positions the step's attention reads per slot
        self.groups: list[PrefixGroup] = []
        self.identity = False  # batch row i is slot i for every slot (no scatter of queries needed)
        self.per_row = False  # few rows still decode: each attends to its own tail alone (no padding, no mask)
        self.slots: list[int] = []  # the step's slot of each batch row
        self.read = 0  # KV positions this step's attention reads (each prefix view once, the tails padded)
        self._slot_index = self._tail_index = self._lengths = None
        self._masks: dict[torch.dtype, torch.Tensor] = {}
        self._cache = _DecodeCache([_DecodeLayer(self, i) for i in range(num_layers)])

    def decode_cache(self, positions: list[int], slots: list[int], device: torch.device) -> tuple[Cache, torch.Tensor]:
        """The cache for one step: batch row i is slot `slots[i]`, writing its token at true position
        `positions[i]`."""
        rows = self.rows
        tail_positions = [p - self.offsets[s] for p, s in zip(positions, slots, strict=True)]
        for s, t in zip(slots, tail_positions, strict=True):
            if t != self.tails[s] or t >= self.capacity:
                raise RuntimeError(f"slot {s} writes tail position {t}, holds {self.tails[s]} of {self.capacity}")
            self.tails[s] = t + 1
        self.positions = list(positions)
        self.slots = list(slots)
        self.width = max(self.tails[s] for s in slots)  # rows that left the batch do not widen the step
        packed = torch.tensor([*slots, *tail_positions, *self.tails], device=device)
        count = len(slots)
        self._slot_index, self._tail_index = packed[:count], packed[count : 2 * count]
        self._lengths = packed[2 * count :]
        self._masks = {}
        self.identity = count == len(rows) and slots == list(range(count))
        # half the slots or fewer still decoding: one call per row over its own tail beats the padded call over
        # every slot (benchmarks/decode_attention.py: the crossing lies between half and all of the slots)
        self.per_row = PER_ROW_SHARE * count <= len(rows)
        self.groups = _groups(
            [(None, 0) if self.whole[s] else (rows[s].shared, rows[s].shared_length) for s in slots], device
        )
        tails = sum(self.tails[s] for s in slots) if self.per_row else len(rows) * self.width
        self.read = sum(g.length for g in self.groups) + tails
        self.active = True
        return self._cache, torch.ones((count, 1, 1, 1), dtype=torch.bool, device=device)

    def write(self, layer: int, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        """This step's keys and values ([batch, kv_heads, 1, dim]) into their slots, the layer's batch made first."""
        if self.keys[layer] is None:
            self._gather(layer, key_states, value_states)
        self.keys[layer][self._slot_index, :, self._tail_index] = key_states[:, :, 0]
        self.values[layer][self._slot_index, :, self._tail_index] = value_states[:, :, 0]

    def _gather(self, layer: int, like_keys: torch.Tensor, like_values: torch.Tensor) -> None:
        """The layer's tails into one zeroed tensor (padding must be finite: it is masked, then multiplied by 0)."""
        slots = len(self.rows)
        keys = like_keys.new_zeros((slots, like_keys.shape[1], self.capacity, like_keys.shape[-1]))
        values = like_values.new_zeros((slots, like_values.shape[1], self.capacity, like_values.shape[-1]))
        for slot, row in enumerate(self.rows):
            start, held = (row.shared_length if self.whole[slot] else 0), row.tail_length
            if start:
                shared = row.shared
                keys[slot, :, :start] = shared.keys[layer][0]
                values[slot, :, :start] = shared.values[layer][0]
                shared.keys[layer] = shared.values[layer] = None  # moved: back at `close`
            if held and row.keys and row.keys[layer] is not None:
                keys[slot, :, start : start + held] = row.keys[layer][0, :, :held]
                values[slot, :, start : start + held] = row.values[layer][0, :, :held]
            if row.keys:
                row.keys[layer] = row.values[layer] = None  # the row's own copy goes (its block with its last layer)
        self.keys[layer], self.values[layer] = keys, values

    def tail_of(self, layer: int, slot: int) -> tuple[torch.Tensor, torch.Tensor]:
        """One slot's tail of `layer` over the positions it holds this step, in place: [1, kv_heads, held, dim]."""
        held = self.tails[slot]
        return self.keys[layer][slot : slot + 1, :, :held], self.values[layer][slot : slot + 1, :, :held]

    def tails_of(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Every slot's tail of `layer` over this step's width, in place: [slots, kv_heads, width, dim]."""
        return self.keys[layer][:, :, : self.width], self.values[layer][:, :, : self.width]

    def mask(self, dtype: torch.dtype) -> torch.Tensor:
        """[slots, 1, 1, width]: 0 where a slot holds a position, -inf past its length."""
        mask = self._masks.get(dtype)
        if mask is None:
            held = torch.arange(self.width, device=self._lengths.device) < self._lengths[:, None]
            mask = torch.zeros(held.shape, dtype=dtype, device=held.device).masked_fill_(~held, float("-inf"))
            mask = self._masks[dtype] = mask[:, None, None, :]
        return mask

    @property
    def slot_index(self) -> torch.Tensor:
        return self._slot_index

    def close(self, kv_rows) -> None:
        """Each row's tail back into tensors of its own (sized to its tail, `kv_rows.tensors`); the batch freed.
        A row holds the positions its `ids` cover (set by the caller before closing)."""
        self.active = False
        if any(k is None for k in self.keys):  # no step completed a forward: the rows still hold their tails
            return

        for slot, row in enumerate(self.rows):
            start, held = (row.shared_length if self.whole[slot] else 0), row.tail_length
            row.keys, row.values, row.capacity = [], [], rounded(max(held, 1))
            for layer in range(len(self.keys)):
                if start:  # the prefix moved back into tensors of its own length
                    row.shared.keys[layer] = self.keys[layer][slot : slot + 1, :, :start].clone()
                    row.shared.values[layer] = self.values[layer][slot : slot + 1, :, :start].clone()
                keys, values = kv_rows.tensors(row, layer, self.keys[layer], self.values[layer])
                keys[0, :, :held] = self.keys[layer][slot, :, start : start + held]
                values[0, :, :held] = self.values[layer][slot, :, start : start + held]
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
