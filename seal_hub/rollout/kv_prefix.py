"""A task prefix's KV held once, shared by reference count; and the prefix store that keeps released ones.

A BFCL task's prefix (system prompt, tool schemas, first user turn) is the same for every rollout of the task's
GRPO group and for every step of each episode. `SharedPrefix` holds that prefix's keys and values once, per layer
``[1, kv_heads, length, head_dim]`` (exactly its length: nothing reserved), and counts who refers to it: every
row (`seal_hub.rollout.kv_rows`) of the group holds one reference and reads it in place (the decode attention
reads it once per group, `seal_hub.rollout.rows_attention`), and the `PrefixStore` holds one while it keeps it.
The tensors are freed when the last reference goes.

The design choice: a prefix is immutable once its first row's prefill has filled it. A row never writes into
it: everything after the part it shares goes to the row's own tail. A row that diverges inside the shared part
keeps the common positions as a shorter view of the same tensors (nothing copied, nothing overwritten), so
copy-on-write never has to copy.

`PrefixStore` keeps prefixes that no live row refers to any more, up to `max_bytes` in all (least recently used
out first). Taking an entry hands its reference over to the row that takes it (it leaves the store), so a
prefix's KV exists once whether a row, the store, or both refer to it.

Different tasks' prefixes that agree on their first tokens (BFCL multi-turn tasks of one tool class share the
system prompt and the tool schemas, thousands of tokens, and differ from the user's question on) cannot lend each
other a view: a prefix serves a request only when one is a prefix of the other. A new prefix instead *borrows* its
start from a filled one (`borrow`): the common positions' KV is copied in (`fill_borrowed`, once the lender is
filled), and only the rest is prefilled. The KV of position p depends on tokens 0..p alone, so the copy is the
same KV the prefill would compute (up to the rounding of a differently packed forward), for a memory copy instead of
a forward over those positions: the 100 tasks x 1 evaluation of BFCL multi-turn prefilled 404k tokens without it.

Not covered: holding that common part once (each prefix keeps its own copy; vLLM's block hashing shares it), and
eviction under memory pressure of prefixes live rows hold.
"""

from __future__ import annotations

from collections import OrderedDict

import torch


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
        """Tensors of its own where it holds views of a larger storage (a decode batch's, `kv_step`): what a prefix
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
