"""A paged KV block pool: fixed-size blocks, reference counts, a free list, per-row block tables, copy-on-write.

The pool holds, per model layer, keys and values shaped ``[blocks, kv_heads, block_size, head_dim]``. A row (one
episode) is a `BlockTable`: the list of block ids that hold its positions 0..length-1 in order, block ``i`` holding
positions ``i * block_size .. (i + 1) * block_size - 1``. Rows of one task's group share the task prompt's blocks
(`fork` adds a reference, copies nothing); a block goes back to the free list when its last reference goes. A row
that appends into a last block it shares with another row first gets its own copy of that block (copy-on-write),
so the other row's tokens are never overwritten. Full shared blocks are never written again, so they are never
copied.

The design choice: the pool grows to what is reserved (`reserve`), not to a fixed maximum, so memory follows the
live episodes; the storage is re-allocated (one layer at a time) only when the free list cannot serve a request.
Block ids stay valid across growth.

Not covered: which attention reads the blocks (the decode and prefill cache objects are separate), evicting
blocks under memory pressure (the caller releases rows), and sliding-window or state-space layers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

GROWTH = 2  # the storage grows to at least this many times its blocks when the free list runs dry


@dataclass(frozen=True)
class PoolShape:
    """What one block holds: per layer, keys and values of `block_size` positions."""

    layers: int
    kv_heads: int
    head_dim: int
    block_size: int = 16
    dtype: torch.dtype = torch.float32
    device: str | torch.device = "cpu"

    def __post_init__(self):
        for name in ("layers", "kv_heads", "head_dim", "block_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"PoolShape.{name} must be >= 1, got {getattr(self, name)}")

    @property
    def block_bytes(self) -> int:
        """Bytes one block takes across all layers, keys and values."""
        element = torch.empty((), dtype=self.dtype).element_size()
        return 2 * self.layers * self.kv_heads * self.block_size * self.head_dim * element


@dataclass
class BlockTable:
    """One row: the blocks holding its positions in order, and how many positions it holds."""

    blocks: list[int] = field(default_factory=list)
    length: int = 0


class BlockPool:
    """Blocks of KV for every row of a backend, shared by reference count."""

    def __init__(self, shape: PoolShape, blocks: int = 0):
        self.shape = shape
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        self.refcounts: list[int] = []
        self.free: list[int] = []
        self._allocate(blocks)

    # storage
    @property
    def capacity(self) -> int:
        """Blocks the storage holds (used and free)."""
        return len(self.refcounts)

    @property
    def used(self) -> int:
        """Blocks at least one row references."""
        return self.capacity - len(self.free)

    @property
    def nbytes(self) -> int:
        return self.capacity * self.shape.block_bytes

    def _allocate(self, total: int) -> None:
        """Grow the storage to `total` blocks, one layer at a time; existing blocks keep their ids and contents."""
        old = self.capacity
        if total <= old:
            return
        s = self.shape
        dims = (total, s.kv_heads, s.block_size, s.head_dim)
        for layer in range(s.layers):
            for store in (self.keys, self.values):
                grown = torch.zeros(dims, dtype=s.dtype, device=s.device)
                if layer < len(store):
                    grown[:old].copy_(store[layer])
                    store[layer] = grown
                else:
                    store.append(grown)
        self.refcounts.extend([0] * (total - old))
        self.free.extend(range(total - 1, old - 1, -1))  # popped from the end: lowest id first

    def reserve(self, blocks: int) -> None:
        """Make sure `blocks` more blocks can be taken without growing the storage again."""
        short = blocks - len(self.free)
        if short > 0:
            self._allocate(max(self.capacity + short, self.capacity * GROWTH if self.capacity else short))

    # references
    def _take(self) -> int:
        if not self.free:
            self.reserve(1)
        block = self.free.pop()
        self.refcounts[block] = 1
        return block

    def _drop(self, block: int) -> None:
        if self.refcounts[block] < 1:
            raise RuntimeError(f"block {block} released more times than it was referenced")
        self.refcounts[block] -= 1
        if self.refcounts[block] == 0:
            self.free.append(block)

    def blocks_for(self, positions: int) -> int:
        return -(-positions // self.shape.block_size)

    # rows
    def admit(self) -> BlockTable:
        """A new, empty row."""
        return BlockTable()

    def fork(self, row: BlockTable) -> BlockTable:
        """A row that shares all of `row`'s blocks (a group's rollout of a task prompt); copies nothing."""
        for block in row.blocks:
            self.refcounts[block] += 1
        return BlockTable(list(row.blocks), row.length)

    def append(self, row: BlockTable, tokens: int) -> list[tuple[int, int]]:
        """Room for `tokens` more positions in `row`: their (block, offset) slots, in order.

        A shared, partly filled last block is copied first (copy-on-write), so writes land only in this row's own
        blocks.
        """
        if tokens < 0:
            raise ValueError(f"cannot append {tokens} positions")
        size = self.shape.block_size
        needed = self.blocks_for(row.length + tokens) - len(row.blocks)
        last_shared = row.length % size != 0 and tokens > 0 and self.refcounts[row.blocks[-1]] > 1
        self.reserve(needed + int(last_shared))
        if last_shared:
            row.blocks[-1] = self._copy(row.blocks[-1])
        row.blocks.extend(self._take() for _ in range(needed))
        slots = [(row.blocks[p // size], p % size) for p in range(row.length, row.length + tokens)]
        row.length += tokens
        return slots

    def _copy(self, block: int) -> int:
        """This row's own copy of a shared block (its reference to the original dropped)."""
        own = self._take()
        for store in (*self.keys, *self.values):
            store[own].copy_(store[block])
        self._drop(block)
        return own

    def release(self, row: BlockTable) -> None:
        """The row lets go of its blocks; a block whose last reference this was goes back to the free list."""
        for block in row.blocks:
            self._drop(block)
        row.blocks.clear()
        row.length = 0

    # data
    def write(self, layer: int, slots: list[tuple[int, int]], keys: torch.Tensor, values: torch.Tensor) -> None:
        """Store keys and values shaped [kv_heads, len(slots), head_dim] at `slots` of one layer."""
        blocks = torch.tensor([b for b, _ in slots], device=self.keys[layer].device)
        offsets = torch.tensor([o for _, o in slots], device=self.keys[layer].device)
        self.keys[layer][blocks, :, offsets] = keys.transpose(0, 1).to(self.shape.dtype)
        self.values[layer][blocks, :, offsets] = values.transpose(0, 1).to(self.shape.dtype)

    def gather(self, layer: int, row: BlockTable) -> tuple[torch.Tensor, torch.Tensor]:
        """A row's keys and values of one layer, shaped [kv_heads, length, head_dim] (a copy, for checks)."""
        s = self.shape
        index = torch.tensor(row.blocks, dtype=torch.long, device=self.keys[layer].device)

        def rows(store: torch.Tensor) -> torch.Tensor:
            picked = store[index].transpose(0, 1).reshape(s.kv_heads, len(row.blocks) * s.block_size, s.head_dim)
            return picked[:, : row.length]

        return rows(self.keys[layer]), rows(self.values[layer])
