"""The KV of every live episode: a task prefix held once per group by reference count, and each row's own tail.

A task's prefix (system prompt, tool schemas, first user turn) is the same for every rollout of its GRPO group and
every step of an episode. A row (one episode, `_Row`) covers its sequence's positions 0..n-1 in two parts:

- a reference to a `SharedPrefix` and how many of its positions it uses: the group's first row prefills it, the
  others take a reference (nothing copied), and it is freed with its last reference. A prefix is immutable once
  filled: a row that diverges inside it keeps the common positions as a shorter view and writes the rest to its
  tail, so copy-on-write never copies;
- its own tail (everything after), per layer ``[1, kv_heads, capacity, head_dim]``, the capacity its length rounded
  up to `CAPACITY_STEP`, allocated in blocks of layers and re-allocated only when a prefill outgrows it.

Positions stay true positions (RoPE): position p is the prefix's p below the shared length, else the tail's
p - shared length. `PrefixStore` keeps the prefixes no live row refers to, up to `max_bytes` (least recently used out
first); taking an entry hands its reference over to the row. A new prefix that agrees with a filled one (another
task's, live or stored) on at least `MIN_BORROW` leading tokens *borrows* those positions: their KV is copied in once
the lender is filled (the KV of position p depends on tokens 0..p alone), and only the rest is prefilled (the
backend runs the lenders' prefill first: `borrowing`, `fill_borrowed`).

`KVRows.layout` orders a call's sessions as rows 0..n-1 (then sessions held but not requested) and shares prefixes;
rows are Python objects, so ordering, swapping or dropping them copies nothing. The model writes through the caches
of `step.py` (`prefill_cache`; `begin_decode`, `decode_cache`, `end_decode`), and after a call each row's tensors
are views of its slot there (a row held but not in the next call gets its own copy at that call's layout).

Not covered: sliding-window eviction, linear-attention or state-space layers (their models need their own cache
classes), holding the common start of two prefixes once (vLLM's block hashing does), and evicting prefixes that
live rows hold.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import torch
from transformers.cache_utils import Cache

from seal_hub.generation.hf.step import CAPACITY_STEP, DecodeBatch, PackedPrefill, Piece, rounded

SHRINK_SLACK = 4 * CAPACITY_STEP  # a tail this much larger than it needs is re-allocated smaller
MIN_BORROW = 64  # a new prefix borrows its start from another task's only when they share this many tokens
BLOCK_BYTES = 40 * 2**20  # a row's tail is allocated in blocks of layers of at least this size (see `_allocate`)


class SharedPrefix:
    """One task prefix's KV in every layer, shared by reference count (see the module docstring)."""

    def __init__(self, ids: tuple[int, ...], num_layers: int) -> None:
        if not ids:
            raise ValueError("a shared prefix needs at least one token")
        self.ids = ids
        self.keys: list[torch.Tensor | None] = [None] * num_layers  # per layer [1, kv_heads, len(ids), head_dim]
        self.values: list[torch.Tensor | None] = [None] * num_layers
        self.refs = 1  # whoever made it holds the first reference
        self.borrowed: tuple[SharedPrefix, int] | None = None  # a lender and how many positions to copy from it

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def freed(self) -> bool:
        return self.refs == 0

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in (*self.keys, *self.values) if t is not None)

    def acquire(self) -> SharedPrefix:
        if self.refs < 1:
            raise RuntimeError("a freed shared prefix cannot be referenced again")
        self.refs += 1
        return self

    def release(self) -> None:
        """Drop one reference; the last one frees the tensors."""
        if self.refs < 1:
            raise RuntimeError("shared prefix released more times than it was referenced")
        self.refs -= 1
        if self.refs == 0:
            self.keys = [None] * len(self.keys)
            self.values = [None] * len(self.values)
            if self.borrowed is not None:  # freed before its copy (a call cut short): the lender is let go
                self.borrowed[0].release()
                self.borrowed = None

    def borrow(self, lender: SharedPrefix, length: int) -> None:
        """Take this (still empty) prefix's first `length` positions from `lender` (whose ids agree with ours on
        them) at `fill_borrowed`; a reference to the lender is held until then."""
        if not 0 < length <= min(len(lender), len(self)) or lender.ids[:length] != self.ids[:length]:
            raise ValueError(f"a prefix can borrow only positions whose tokens it shares with the lender ({length})")
        if self.borrowed is not None or any(k is not None for k in self.keys):
            raise RuntimeError("a shared prefix borrows its start once, before anything is written into it")
        self.borrowed = (lender.acquire(), length)

    def fill_borrowed(self) -> int:
        """Copy the borrowed positions in from the lender (filled by now), let it go; returns how many."""
        if self.borrowed is None:
            return 0
        lender, length = self.borrowed
        for layer, (keys, values) in enumerate(zip(lender.keys, lender.values, strict=True)):
            if keys is None or values is None:
                raise RuntimeError("a shared prefix borrowed from a lender that was never filled")
            own_keys, own_values = self.tensors(layer, keys, values)
            own_keys[:, :, :length] = keys[:, :, :length]
            own_values[:, :, :length] = values[:, :, :length]
        self.borrowed = None
        lender.release()
        return length

    def serves(self, prefix: tuple[int, ...]) -> int:
        """How many leading positions of `prefix` this prefix can lend (0 unless one is a prefix of the other).
        A prefix still being filled serves too: its filler's prefill runs before any row that shares it reads it."""
        n = min(len(self.ids), len(prefix))
        return n if n and self.ids[n - 1] == prefix[n - 1] and self.ids[:n] == prefix[:n] else 0

    def tensors(self, layer: int, like_keys: torch.Tensor, like_values: torch.Tensor):
        """This layer's keys and values, allocated at the first write with the model's KV shapes."""
        if self.keys[layer] is None:
            if self.refs < 1:
                raise RuntimeError("writing into a freed shared prefix")
            length = len(self.ids)
            self.keys[layer] = like_keys.new_empty((1, like_keys.shape[1], length, like_keys.shape[-1]))
            self.values[layer] = like_values.new_empty((1, like_values.shape[1], length, like_values.shape[-1]))
        return self.keys[layer], self.values[layer]

    def compact(self) -> int:
        """Tensors of its own where it holds views of a larger storage (a decode batch's, `step.py`): what a prefix
        kept after its rows let go must not pin the rest of that storage. Returns the bytes copied."""
        copied = 0
        for tensors in (self.keys, self.values):
            for layer, t in enumerate(tensors):
                if t is not None and t.untyped_storage().nbytes() > t.nbytes:
                    tensors[layer] = t.clone()
                    copied += t.nbytes
        return copied

    def view(self, layer: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The first `length` positions of one layer, in place."""
        return self.keys[layer][:, :, :length], self.values[layer][:, :, :length]


class PrefixStore:
    """Shared prefixes no live row refers to, up to `max_bytes` in all; least recently used out first."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[int, ...], SharedPrefix] = OrderedDict()
        self.nbytes = 0
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, prefix: tuple[int, ...]) -> bool:
        return prefix in self._entries

    def put(self, shared: SharedPrefix) -> bool:
        """Keep a reference to `shared` (evicting the least recently used); False when it alone exceeds the bound."""
        size = shared.nbytes
        if size == 0 or size > self.max_bytes or shared.ids in self._entries:
            return False
        shared.compact()
        while self._entries and self.nbytes + size > self.max_bytes:
            _, old = self._entries.popitem(last=False)
            self.nbytes -= old.nbytes
            old.release()
            self.evictions += 1
        self._entries[shared.ids] = shared.acquire()
        self.nbytes += size
        return True

    def take(self, prefix: tuple[int, ...], more_than: int = 0) -> tuple[SharedPrefix, int] | None:
        """The entry that lends the most of `prefix` (more than `more_than` positions) and how many, handed over
        with the store's reference (it leaves the store)."""
        best, length = None, more_than
        for ids, shared in self._entries.items():
            n = shared.serves(prefix)
            if n > length:
                best, length = ids, n
        if best is None:
            return None
        shared = self._entries.pop(best)
        self.nbytes -= shared.nbytes
        return shared, length

    def entries(self) -> list[SharedPrefix]:
        """The prefixes kept, least recently used first (read, not taken: a lender of a borrowed start)."""
        return list(self._entries.values())

    def clear(self) -> None:
        for shared in self._entries.values():
            shared.release()
        self._entries.clear()
        self.nbytes = 0


def num_layers(model) -> int:
    """How many cache layers a model's forward will ask for."""
    config = model.config
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    count = getattr(text, "num_hidden_layers", None)
    if not isinstance(count, int) or count < 1:
        raise ValueError(f"cannot tell how many layers {type(model).__name__} has (config.num_hidden_layers)")
    return count


def _compact(row: _Row) -> None:
    """Tensors of the row's own where its tail (or its prefix, if it holds it alone) is a view of a larger storage
    (a decode batch's slot, `step.py`)."""
    own = row.nbytes  # a storage larger than all the row's tensors is not one of its own blocks (`_allocate`)
    for tensors in (row.keys, row.values):
        for layer, t in enumerate(tensors):
            if t is not None and t.untyped_storage().nbytes() > own:
                tensors[layer] = t.clone()
    if row.shared is not None and row.shared.refs == 1:
        row.shared.compact()


def _common(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """The length of the longest common prefix of `a` and `b`."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    low, high = 0, n  # a[:low] == b[:low], a[:high] != b[:high]
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if a[:middle] == b[:middle] else (low, middle)
    return low


@dataclass
class _Row:
    session: str
    ids: tuple[int, ...]  # the tokens whose KV the row holds, at positions 0..len-1
    prefix_length: int = 0
    retired: bool = False  # released: dropped at the next layout (its prefix may go to the store)
    shared: SharedPrefix | None = None  # the task prefix it refers to
    shared_length: int = 0  # how many of the shared prefix's positions it uses (its first positions)
    capacity: int = 0  # tail positions its own tensors hold (they are allocated at the first write)
    keys: list[torch.Tensor | None] = field(default_factory=list)  # per layer [1, kv_heads, capacity, head_dim]
    values: list[torch.Tensor | None] = field(default_factory=list)

    @property
    def tail_length(self) -> int:
        return len(self.ids) - self.shared_length

    @property
    def nbytes(self) -> int:
        """The row's own tail (its shared prefix is counted once, by `KVRows.nbytes`)."""
        return sum(t.nbytes for t in (*self.keys, *self.values) if t is not None)

    def share(self, shared: SharedPrefix | None, length: int) -> None:
        """Refer to `length` positions of `shared` (its reference already taken) instead of what it held."""
        self.drop()
        self.shared, self.shared_length = shared, length

    def drop(self) -> None:
        """Let go of everything: the shared prefix's reference and the tail."""
        if self.shared is not None:
            self.shared.release()
        self.shared, self.shared_length = None, 0
        self.keys, self.values, self.capacity = [], [], 0


class KVRows:
    """Rows of per-session KV: a shared prefix reference and an own tail each (see the module docstring)."""

    def __init__(self, num_layers: int) -> None:
        self.num_layers = num_layers
        self.rows: list[_Row] = []
        self.resizes = 0  # how often a row's tail was re-allocated (each copies its cached positions once)
        self.swaps = 0  # rows swapped out of a decode batch when they finished early
        self.shared_prefixes = 0  # shared prefixes made (each prefilled once)
        self.shared_uses = 0  # rows that took a reference to a prefix another row or the store held
        self.borrowed_positions = 0  # prefix positions copied from another task's prefix instead of prefilled
        self.step: DecodeBatch | None = None  # the current call's decode steps (between begin and end_decode)
        self.write_seconds = 0.0  # decode steps' KV writes, which run inside the model's forward
        self.packed: PackedPrefill | None = None  # the prefill forward under way

    # ----- tail tensors -----

    def tensors(self, row: _Row, layer: int, like_keys: torch.Tensor, like_values: torch.Tensor):
        """`row`'s tail tensors of `layer`, allocated on first use with the shapes the model's KV has."""
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
        (all layers when the tail is small): blocks that large are mapped and unmapped whole by the allocator, so a
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
        """Tail room for `need` positions: grown when short, shrunk when far larger (a row that went back)."""
        if need > row.capacity or row.capacity > rounded(need) + SHRINK_SLACK:
            self._resize(row, rounded(need), keep)

    def _resize(self, row: _Row, capacity: int, keep: int) -> None:
        """Re-allocate `row`'s tail with `capacity` positions, keeping its first `keep` (a block of layers at once)."""
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

    def _live_prefixes(self) -> list[SharedPrefix]:
        return list({id(r.shared): r.shared for r in self.rows if r.shared is not None}.values())

    @property
    def nbytes(self) -> int:
        """The rows' KV: every tail, and every shared prefix once however many rows refer to it."""
        return sum(row.nbytes for row in self.rows) + sum(p.nbytes for p in self._live_prefixes())

    def bytes_per_token(self) -> int:
        """KV bytes one token takes in all layers (0 before the first forward)."""
        for row in self.rows:
            for holder in (row, row.shared):
                if holder is not None and holder.keys and all(t is not None for t in holder.keys):
                    return sum(t.shape[1] * t.shape[3] * t.element_size() for t in (*holder.keys, *holder.values))
        return 0

    # ----- caches the model writes through -----

    def prefill_cache(self, pieces: list[Piece]) -> PackedPrefill:
        """The cache of one packed prefill forward (`step.PackedPrefill`), current until `end_prefill`."""
        for piece in pieces:
            row = self.rows[piece.row]
            if piece.end - row.shared_length > row.capacity:
                raise ValueError(
                    f"prefill up to position {piece.end} exceeds the reserved tail capacity {row.capacity} after "
                    f"the {row.shared_length} shared positions"
                )
            if piece.begin < row.shared_length and row.shared.freed:
                raise RuntimeError("prefilling into a freed shared prefix")
        self.packed = PackedPrefill(self, pieces)
        return self.packed

    def end_prefill(self) -> None:
        self.packed = None

    def begin_decode(self, count: int, room: list[int]) -> DecodeBatch:
        """The decode steps of rows 0..count-1, each decoding up to `room` tokens (`step.DecodeBatch`)."""
        self.step = DecodeBatch(self.rows[:count], room, self.num_layers)
        return self.step

    def decode_cache(self, positions: list[int], slots: list[int], device: torch.device) -> tuple[Cache, torch.Tensor]:
        """One decode step: batch row i is the call's row `slots[i]` (rows keep their slot while others leave),
        writing its token at `positions[i]`; with a placeholder mask (the rows' attention reads exactly theirs)."""
        return self.step.decode_cache(positions, slots, device)

    def end_decode(self) -> None:
        """The call over: each row keeps its slot of the call's storage as its tensors (`DecodeBatch.close`)."""
        step, self.step = self.step, None
        if step is not None:
            step.close(self)
            self.write_seconds += step.write_seconds

    # ----- rows -----

    def retire(self, session: str) -> None:
        for row in self.rows:
            if row.session == session and not row.retired:
                row.retired = True

    def forget(self, sessions: set[str]) -> None:
        """Drop these sessions' rows outright (a generate call that failed half-way: their KV may be partial)."""
        for row in self.rows:
            if row.session in sessions:
                row.drop()
        self.rows = [row for row in self.rows if row.session not in sessions]
        self.step = self.packed = None

    def set_ids(self, row: int, ids: tuple[int, ...], prefix_length: int) -> None:
        self.rows[row].ids, self.rows[row].prefix_length = ids, prefix_length

    def swap(self, a: int, b: int) -> None:
        """Exchange rows `a` and `b` (nothing is copied: rows are objects, their tails keep their batch slots)."""
        self.rows[a], self.rows[b] = self.rows[b], self.rows[a]
        self.swaps += 1

    def _lender(self, prefix: tuple[int, ...], lenders: list[SharedPrefix], store: PrefixStore):
        """The live or stored shared prefix that lends the most of `prefix`: (it, with a reference taken, and how
        many positions), or (None, 0)."""
        best, length = None, 0
        for shared in lenders:
            n = shared.serves(prefix) if not shared.freed else 0
            if n > length:
                best, length = shared, n
        stored = store.take(prefix, more_than=length) if length < len(prefix) else None
        if stored is not None:
            lenders.append(stored[0])
            return stored  # the store's reference is handed over
        return (best.acquire(), length) if best is not None else (None, 0)

    def _borrow_start(self, shared: SharedPrefix, starts: list[SharedPrefix]) -> int:
        """Let a new prefix borrow its start from the filled prefix it agrees with longest (at least `MIN_BORROW`
        tokens; `SharedPrefix.borrow`); returns how many positions it borrowed. One that borrows nothing may be
        borrowed from (it is filled in the first prefill phase, the borrowers in the second)."""
        lender, length = None, MIN_BORROW - 1
        for candidate in starts:
            n = _common(candidate.ids, shared.ids)
            if n > length:
                lender, length = candidate, n
        if lender is None:
            starts.append(shared)
            return 0
        shared.borrow(lender, length)
        self.borrowed_positions += length
        return length

    def borrowing(self, count: int) -> set[int]:
        """Which of rows 0..count-1 refer to a prefix that still waits for its borrowed start."""
        return {i for i, r in enumerate(self.rows[:count]) if r.shared is not None and r.shared.borrowed is not None}

    def fill_borrowed(self, count: int) -> None:
        """Copy the borrowed starts of rows 0..count-1's prefixes in (their lenders are filled by now)."""
        for row in self.rows[:count]:
            if row.shared is not None:
                row.shared.fill_borrowed()

    def layout(
        self,
        sessions: list[str],
        targets: list[tuple[int, ...]],
        prefixes: list[tuple[int, ...]],
        store: PrefixStore,
    ) -> list[int]:
        """Rows 0..n-1 for `sessions` (n = len(sessions)), each with tail room for its target's uncached tokens.

        Returns how many leading tokens of each target its row already holds (its own cache from the last step,
        or a task prefix another row or the store holds, now shared); the rest is the caller's to prefill. What
        the call will decode is not reserved here: the decode batch (`begin_decode`) holds the new tokens.
        """
        held = {r.session: r for r in self.rows if not r.retired}
        lenders = self._live_prefixes()  # and, as they come, those this layout makes or takes from the store
        # filled before this call's prefill, or filled whole in its first phase: what a new prefix may borrow from
        starts = [p for p in lenders if not p.freed and p.borrowed is None] + store.entries()
        new_rows: list[_Row] = []
        kept: list[int] = []
        for session, target, prefix in zip(sessions, targets, prefixes, strict=True):
            row = held.pop(session, None)
            keep = _common(row.ids, target) if row is not None else 0
            if row is None:
                row = _Row(session, ())
            if keep < row.shared_length:  # diverged inside the shared part: a shorter view of it, no copy
                row.shared_length = keep
                row.keys, row.values, row.capacity = [], [], 0
                if keep == 0:
                    row.drop()
            if prefix and keep < len(prefix):
                shared, length = self._lender(prefix, lenders, store)
                if shared is not None and length > keep:
                    row.share(shared, length)
                    keep = length
                    self.shared_uses += 1
                elif shared is not None:
                    shared.release()
                if keep == 0:  # nothing held and nobody lends it: this row fills a new shared prefix
                    shared = SharedPrefix(prefix, self.num_layers)
                    lenders.append(shared)
                    row.share(shared, len(prefix))
                    self.shared_prefixes += 1
                    keep = self._borrow_start(shared, starts)
            row.session, row.ids, row.retired = session, target[:keep], False
            self._fit(row, len(target) - row.shared_length, keep - row.shared_length)
            new_rows.append(row)
            kept.append(keep)
        taken = {id(r) for r in new_rows}
        extra_rows = [r for r in self.rows if not r.retired and id(r) not in taken]
        for r in extra_rows:  # held, not in this call: their own copy, so the last call's storage can go
            _compact(r)
        for r in self.rows:  # released rows: dropped; the last reference to a prefix hands it to the store
            if r.retired and id(r) not in taken:
                if r.shared is not None and r.shared.refs == 1:
                    store.put(r.shared)
                r.drop()
        self.rows = new_rows + extra_rows
        return kept
