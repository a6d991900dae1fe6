"""Packed prefill: several rows' new tokens in one forward, each row's queries reading only its own positions.

After the first step of an episode, each step prefills only the environment's answer (tens to hundreds of
tokens) of every live row. One forward per row would run 32 small forwards for 32 rows; `pack` instead cuts the
rows' uncached tokens into `Piece`s and packs them, in row order, into forwards of at most `PREFILL_CHUNK`
tokens (a long prompt is cut into chunks; a short answer shares its forward with the next rows'). The model sees
one sequence of ``[1, tokens]`` with each token's true position (`position_ids`); the weights' matmuls run over
all of them at once.

`PackedPrefill` is the cache the model writes through: each layer's update writes every piece's keys and values
where its row keeps them (a piece inside a row's shared prefix fills that prefix, which only the prefix's first
row does; a piece after it goes to the row's own tail). The attention (`seal_hub.rollout.rows_attention`) then
runs per piece over that row's positions only, in place: the shared prefix (causal inside it, whole after it)
and the tail (causal), merged by their log-sum-exp. Pieces never straddle a row's shared-prefix boundary, so
every query sees at least one key on each side it reads.

Rows are packed in row order: a group's first row fills its prefix before (or in the same forward as, which
writes before any attention reads) the rows that share it read it. Not covered: attention for models with extra
per-head inputs (see rows_attention), sliding-window layers.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers.cache_utils import Cache, CacheLayerMixin

PREFILL_CHUNK = 512  # tokens per prefill forward: bounds the activations of a long prompt


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


class _PackedLayer(CacheLayerMixin):
    is_sliding = False

    def __init__(self, packed: PackedPrefill, index: int) -> None:
        super().__init__()
        self.packed, self.index = packed, index
        self.is_initialized = True

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        """Nothing to do: the tensors are the rows' own."""

    def get_max_length(self) -> int:
        return -1

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        self.packed.write(self.index, key_states, value_states)
        return key_states, value_states  # the pieces' attention reads the rows themselves (rows_attention)

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
