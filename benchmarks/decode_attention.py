"""Decode attention once rows have left a generate call: the padded call over every slot, or one call per row left.

`HFBackend` holds a generate call's tails in one padded tensor per layer (`seal_hub.rollout.kv_step.DecodeBatch`:
slot i for the call's row i). While every row decodes, a step's tail attention is ONE call per layer over all
slots, each masked past its own length. Rows that end their turn leave the forward's batch but keep their slot,
so that call goes on reading every slot up to the longest row left, the finished ones riding along with a zero
query. In a multi-step episode that matters: in the smart home example's evaluation after the warm-up, 27 of 28
rows end each model step after ~45 tokens while one runs to the 96-token limit, so half of every call's steps read
28 rows to decode one.

So a step whose decoding rows are at most 1/`PER_ROW_SHARE` of the slots runs one call per row left, over that
row's own tail only (no padding, no mask). This script times both with the product's kernel
(`shared_attention.attention_with_lse`) for 1, a quarter, half, three quarters and all of the slots left, and says
which one the product takes. Shapes default to that evaluation's late calls: 28 slots of 600-2350 positions,
SmolLM2-135M's 30 layers with 9 query heads on 3 KV heads of 64, in bf16 (the dtype `generation_dtype: auto`
picks on a CPU with AMX or AVX512-BF16; `--dtype float32` elsewhere). The two agree to rounding (checked first).
Last line exactly `decode attention with half the rows left, padded / per row: X.XXx` (time ratio; above 1 the
per-row calls are faster).

    python benchmarks/decode_attention.py [--slots 28] [--min-length 600] [--max-length 2350] [--dtype bfloat16]
"""

from __future__ import annotations

import argparse
import time

import torch

from seal_hub.rollout.kv_step import PER_ROW_SHARE
from seal_hub.rollout.shared_attention import attention_with_lse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slots", type=int, default=28)
    parser.add_argument("--layers", type=int, default=30)
    parser.add_argument("--heads", type=int, default=9)
    parser.add_argument("--kv-heads", type=int, default=3)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--min-length", type=int, default=600)
    parser.add_argument("--max-length", type=int, default=2350)
    parser.add_argument("--dtype", choices=["bfloat16", "float32"], default="bfloat16")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    generator = torch.Generator().manual_seed(0)
    slots, kv_heads, dim = args.slots, args.kv_heads, args.head_dim
    group = args.heads // kv_heads
    lengths = torch.randint(args.min_length, args.max_length + 1, (slots,), generator=generator).tolist()
    shape = (slots, kv_heads, max(lengths) + 97, dim)  # a call's capacity: the longest row and what it may decode
    keys = torch.randn(shape, generator=generator).to(device, dtype)
    values = torch.randn(shape, generator=generator).to(device, dtype)
    query = torch.randn(slots, kv_heads, group, dim, generator=generator).to(device, dtype)
    scale = dim**-0.5
    order = torch.randperm(slots, generator=generator).tolist()  # which rows are left: a random subset

    def padded(left: list[int]):
        width = max(lengths[s] for s in left)
        index = torch.tensor(left, device=device)
        held = torch.arange(width, device=device) < torch.tensor(lengths, device=device)[:, None]
        mask = torch.zeros(held.shape, dtype=dtype, device=device).masked_fill_(~held, float("-inf"))[:, None, None]

        def step():
            queries = query.new_zeros(query.shape)  # rows that left ride along with a zero query
            queries[index] = query[index]
            out, _ = attention_with_lse(queries, keys[:, :, :width], values[:, :, :width], mask, scale)
            return out[index]

        return step

    def per_row(left: list[int]):
        def step():
            parts = [
                attention_with_lse(
                    query[s : s + 1], keys[s : s + 1, :, : lengths[s]], values[s : s + 1, :, : lengths[s]], None, scale
                )[0]
                for s in left
            ]
            return torch.cat(parts)

        return step

    def ms_per_step(fn) -> float:
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
        return 1000 * best

    print(
        f"{slots} slots of {min(lengths)}-{max(lengths)} positions, {args.layers} layers, {args.heads} heads on "
        f"{kv_heads} KV heads of {dim}, {args.dtype}, {device}, {torch.get_num_threads()} threads"
    )
    print(f"{'rows left':>10} {'padded ms':>10} {'per row ms':>11}  product takes")
    half = None
    for count in sorted({1, max(1, slots // 4), max(1, slots // 2), max(1, 3 * slots // 4), slots}):
        left = sorted(order[:count])
        a, b = padded(left), per_row(left)
        difference = (a().float() - b().float()).abs().max().item()
        if difference > (2e-2 if dtype == torch.bfloat16 else 1e-4):
            raise SystemExit(f"the two attentions differ by {difference}: the comparison would be meaningless")
        times = ms_per_step(a), ms_per_step(b)
        takes = "per row" if PER_ROW_SHARE * count <= slots else "padded"
        print(f"{count:>10} {times[0]:>10.1f} {times[1]:>11.1f}  {takes}")
        if count == max(1, slots // 2):
            half = times
    print(f"decode attention with half the rows left, padded / per row: {half[0] / half[1]:.2f}x")


if __name__ == "__main__":
    main()
