"""Decode attention over a generate call's rows: one padded call, buckets of similar length, or one call per row.

`HFBackend` moves a generate call's rows into buckets (`seal_hub.generation.hf.step.plan`): each bucket one padded
tensor per layer, read by one attention call per layer, rows masked past their own length. One bucket for all rows
pads every row to the longest (the demo's evaluation, 100 prompts of 200 to 900 tokens, held 1.9x the KV its rows
need); one bucket per row runs one call per row. `plan` minimises padded positions plus `BUCKET_CALL` positions a
bucket. This script runs the product's own decode step (`DecodeBatch.decode_cache`, each layer's KV write and
`attention.decode_attention`, in `seal_hub.generation.hf`) over random KV with the three plans, for all, half, a
quarter and one of the rows still decoding (a bucket whose decoding rows are at most 1/`PER_ROW_SHARE` of its slots
attends row by row), checks that the three agree, and prints each plan's time a step (all layers) and the storage
it holds against the KV the rows need. Shapes default to that evaluation: 100 rows alone on their prompts (whole
rows, no shared prefix), lengths uniform in 200-840, 96 positions of room, SmolLM2-135M's 30 layers with 9 query
heads on 3 KV heads of 64, bf16 (the dtype `generation_dtype: auto` picks on a CPU with AMX or AVX512-BF16;
`--dtype float32` elsewhere). Last line exactly `decode attention, one padded call / buckets: X.XXx` (time a step
with every row decoding; above 1 the buckets are faster).

    python benchmarks/decode_attention.py [--rows 100] [--min-length 200] [--max-length 840] [--dtype bfloat16]
"""

from __future__ import annotations

import argparse
import time

import torch

from seal_hub.generation.hf.attention import decode_attention
from seal_hub.generation.hf.cache import _Row
from seal_hub.generation.hf.step import BUCKET_CALL, DecodeBatch

PLANS = {"one padded call": 10**12, "buckets": BUCKET_CALL, "one call per row": 0}  # the cost of one more bucket


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--layers", type=int, default=30)
    parser.add_argument("--heads", type=int, default=9)
    parser.add_argument("--kv-heads", type=int, default=3)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--min-length", type=int, default=200)
    parser.add_argument("--max-length", type=int, default=840)
    parser.add_argument("--room", type=int, default=96, help="positions each row may decode in the call")
    parser.add_argument("--dtype", choices=["bfloat16", "float32"], default="bfloat16")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.room < 4 * (args.repeats + 1):  # four counts of rows left, a checked step and the timed ones each
        raise SystemExit(f"--room must hold every step a row decodes here: at least {4 * (args.repeats + 1)}")
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    generator = torch.Generator().manual_seed(0)
    n, layers, kv_heads, dim = args.rows, args.layers, args.kv_heads, args.head_dim
    lengths = torch.randint(args.min_length, args.max_length + 1, (n,), generator=generator).tolist()

    def random(*shape):
        return torch.randn(*shape, generator=generator).to(device, dtype)

    source = [[(random(1, kv_heads, m, dim), random(1, kv_heads, m, dim)) for _ in range(layers)] for m in lengths]
    new_keys, new_values = random(n, kv_heads, 1, dim), random(n, kv_heads, 1, dim)
    query = random(n, args.heads, 1, dim)
    order = torch.randperm(n, generator=generator).tolist()  # which rows are left: a random subset

    def batch(call: int) -> DecodeBatch:
        rows = []
        for i, length in enumerate(lengths):
            row = _Row(f"r{i}", tuple(range(length)), capacity=length)
            row.keys = [k for k, _ in source[i]]
            row.values = [v for _, v in source[i]]
            rows.append(row)
        return DecodeBatch(rows, [args.room] * n, layers, call)

    def step(decode: DecodeBatch, left: list[int]) -> torch.Tensor:
        decode.decode_cache([decode.tails[s] for s in left], left, device)
        index = torch.tensor(left, device=device)
        out = None
        for layer in range(layers):
            decode.write(layer, new_keys[index], new_values[index])
            out = decode_attention(decode, layer, query[index], dim**-0.5)
        if device.type == "cuda":
            torch.cuda.synchronize()
        return out

    needed = sum(length + args.room + 1 for length in lengths)  # a slot also holds the last input's position
    print(
        f"{n} whole rows of {min(lengths)}-{max(lengths)} positions (+{args.room} room), {layers} layers, "
        f"{args.heads} heads on {kv_heads} KV heads of {dim}, {args.dtype}, {device}, "
        f"{torch.get_num_threads()} threads"
    )
    batches = {name: batch(call) for name, call in PLANS.items()}
    for name, decode in batches.items():
        print(
            f"  {name}: {len(decode.buckets)} bucket(s), storage {decode.size / needed:.2f}x the positions the rows "
            "need"
        )
    print(f"{'rows left':>10}" + "".join(f"{name + ' ms':>22}" for name in PLANS))
    all_rows = None
    tolerance = 2e-2 if dtype == torch.bfloat16 else 1e-4
    for count in sorted({1, max(1, n // 4), max(1, n // 2), n}, reverse=True):
        left = sorted(order[:count])
        outputs = {name: step(decode, left) for name, decode in batches.items()}  # warm-up, and the check
        reference = outputs["one padded call"].float()
        for name, out in outputs.items():
            difference = (out.float() - reference).abs().max().item()
            if difference > tolerance:
                raise SystemExit(
                    f"{name} differs from the padded call by {difference}: the timing would be meaningless"
                )
        times = {}
        for name, decode in batches.items():
            best = float("inf")
            for _ in range(args.repeats):
                start = time.perf_counter()
                step(decode, left)
                best = min(best, time.perf_counter() - start)
            times[name] = 1000 * best
        print(f"{count:>10}" + "".join(f"{times[name]:>22.1f}" for name in PLANS))
        if count == n:
            all_rows = times
    print(f"decode attention, one padded call / buckets: {all_rows['one padded call'] / all_rows['buckets']:.2f}x")


if __name__ == "__main__":
    main()
