"""Decode attention: the batched backend's one call per row against one batched call over a padded block.

One decode step of `HFBackend` attends, in every layer, each row's one new query to that row's own keys and values
(`seal_hub.rollout.rows_attention._row_attention`: rows of different lengths, nothing padded). The alternative is
one `scaled_dot_product_attention` call per layer over a ``[rows, kv_heads, longest, dim]`` block with a padding
mask. The rows live in their own tensors (`kv_rows`: each sized to its episode), so that block has to be gathered
every step; the script times the per-row calls, the gather plus the batched call, and the batched call alone (what
a cache laid out as one padded block would pay, at the cost of every row reserving the longest row's length).

Shapes default to the CPU demo's evaluation: SmolLM2-135M (30 layers, 9 query heads on 3 KV heads of 64), 100 rows
of 330-460 cached tokens, fp32. Results match to float rounding (checked first). Last line exactly
`decode attention, padded block / per row: X.XXx` (time ratio; above 1 the per-row calls are faster).

    python benchmarks/decode_attention.py [--rows 100] [--layers 30] [--threads N] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.nn import functional as F

from seal_hub.rollout.rows_attention import _row_attention


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--layers", type=int, default=30)
    parser.add_argument("--heads", type=int, default=9)
    parser.add_argument("--kv-heads", type=int, default=3)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--min-length", type=int, default=330)
    parser.add_argument("--max-length", type=int, default=460)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    generator = torch.Generator().manual_seed(0)
    lengths = torch.randint(args.min_length, args.max_length + 1, (args.rows,), generator=generator).tolist()
    capacity = -(-max(lengths) // 128) * 128  # rows are allocated in steps of 128 positions (kv_rows)
    shape = (1, args.kv_heads, capacity, args.head_dim)
    keys = [torch.randn(shape, generator=generator).to(device) for _ in range(args.rows)]
    values = [torch.randn(shape, generator=generator).to(device) for _ in range(args.rows)]
    query = torch.randn(args.rows, args.heads, 1, args.head_dim, generator=generator).to(device)
    width = max(lengths)
    block_keys = torch.empty(args.rows, args.kv_heads, width, args.head_dim, device=device)
    block_values = torch.empty_like(block_keys)
    mask = (torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]).to(device)[:, None, None, :]
    group = args.heads // args.kv_heads

    def per_row():
        return torch.cat(
            [
                _row_attention(query[i : i + 1], keys[i][:, :, :n], values[i][:, :, :n], None)
                for i, n in enumerate(lengths)
            ]
        )

    def gather():
        for i, n in enumerate(lengths):
            block_keys[i, :, :n] = keys[i][0, :, :n]
            block_values[i, :, :n] = values[i][0, :, :n]

    def batched():
        folded = query.reshape(args.rows, args.kv_heads, group, args.head_dim)
        out = F.scaled_dot_product_attention(folded, block_keys, block_values, attn_mask=mask)
        return out.reshape(args.rows, args.heads, 1, args.head_dim)

    def gathered_batched():
        gather()
        return batched()

    gather()
    difference = (per_row() - batched()).abs().max().item()
    if difference > 1e-4:
        raise SystemExit(f"the two attentions differ by {difference}: the comparison would be meaningless")

    def seconds_per_step(fn) -> float:
        fn()  # warm-up
        best = float("inf")
        for _ in range(args.repeats):
            if device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(args.layers):  # one decode step: every layer
                fn()
            if device.type == "cuda":
                torch.cuda.synchronize()
            best = min(best, time.perf_counter() - start)
        return best

    rows, padded, block = (seconds_per_step(fn) for fn in (per_row, gathered_batched, batched))
    print(
        f"{args.rows} rows of {min(lengths)}-{max(lengths)} tokens, {args.layers} layers, {args.heads} heads on "
        f"{args.kv_heads} KV heads of {args.head_dim}, {device}, {torch.get_num_threads()} threads; max difference "
        f"{difference:.1e}"
    )
    print(f"per row (HFBackend):             {1000 * rows:8.1f} ms per decode step")
    print(f"gather + one padded call:        {1000 * padded:8.1f} ms per decode step")
    print(f"one padded call (block kept):    {1000 * block:8.1f} ms per decode step")
    print(f"decode attention, padded block / per row: {padded / rows:.2f}x")


if __name__ == "__main__":
    main()
