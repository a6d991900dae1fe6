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

Not covered: sharing between different tasks' prefixes that agree only on their first tokens (a prefix serves a
request only when one is a prefix of the other), and eviction under memory pressure of prefixes live rows hold.
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

    def clear(self) -> None:
        for shared in self._entries.values():
            shared.release()
        self._entries.clear()
        self.nbytes = 0
