"""The KV block pool: shared blocks freed with their last row, copy-on-write, growth, randomized refcounts."""

from __future__ import annotations

import random

import pytest
import torch

from seal_hub.rollout.kv_blocks import BlockPool, PoolShape

SHAPE = PoolShape(layers=2, kv_heads=2, head_dim=4, block_size=4)


def _fill(pool: BlockPool, row, tokens: int, start: float) -> torch.Tensor:
    """Append `tokens` positions to `row` with distinct values; the row's expected keys of layer 0."""
    slots = pool.append(row, tokens)
    keys = torch.arange(tokens * 2 * 4, dtype=torch.float32).reshape(2, tokens, 4) + start
    for layer in range(SHAPE.layers):
        pool.write(layer, slots, keys + layer, -keys)
    return keys


def test_shared_prompt_blocks_are_freed_when_the_last_row_lets_go():
    pool = BlockPool(SHAPE)
    prompt = pool.admit()
    _fill(pool, prompt, 8, 0.0)  # two full blocks
    group = [pool.fork(prompt) for _ in range(3)]
    assert pool.used == 2 and all(pool.refcounts[b] == 4 for b in prompt.blocks)
    for row in group:
        _fill(pool, row, 1, 100.0)  # each row's own tail block; the full prompt blocks stay shared
    assert pool.used == 2 + 3
    pool.release(prompt)
    for row in group[:-1]:
        pool.release(row)
    assert pool.used == 2 + 1  # the prompt blocks live while one row holds them
    pool.release(group[-1])
    assert pool.used == 0 and sorted(pool.free) == list(range(pool.capacity))


def test_append_into_a_shared_partial_block_copies_it_first():
    pool = BlockPool(SHAPE)
    prompt = pool.admit()
    expected = _fill(pool, prompt, 6, 0.0)  # one full block, one half-filled
    child = pool.fork(prompt)
    tail = _fill(pool, child, 1, 500.0)
    assert child.blocks[0] == prompt.blocks[0]  # the full block is still shared
    assert child.blocks[1] != prompt.blocks[1]  # the partial one was copied
    keys, values = pool.gather(0, prompt)
    assert torch.equal(keys, expected) and torch.equal(values, -expected)  # the parent is untouched
    child_keys, _ = pool.gather(1, child)
    assert torch.equal(child_keys, torch.cat([expected, tail], dim=1) + 1)
    # the parent, now its partial block's only holder, writes in place
    before = list(prompt.blocks)
    _fill(pool, prompt, 1, 900.0)
    assert prompt.blocks == before


def test_the_pool_grows_to_what_is_reserved_and_keeps_contents():
    pool = BlockPool(SHAPE)
    assert pool.capacity == 0
    row = pool.admit()
    expected = _fill(pool, row, 5, 0.0)
    small = pool.capacity
    _fill(pool, pool.admit(), 4 * 20, 0.0)
    assert pool.capacity > small and pool.nbytes == pool.capacity * SHAPE.block_bytes
    keys, _ = pool.gather(0, row)
    assert torch.equal(keys, expected)


def test_releasing_a_block_twice_fails_fast():
    pool = BlockPool(SHAPE)
    row = pool.admit()
    _fill(pool, row, 2, 0.0)
    block = row.blocks[0]
    pool.release(row)
    with pytest.raises(RuntimeError, match="released more times"):
        pool._drop(block)


def _random_round(seed: int) -> None:
    rng = random.Random(seed)
    pool = BlockPool(SHAPE)
    rows: list = []
    contents: list[list[torch.Tensor]] = []  # per row, its keys of layer 0 per append, in order
    for step in range(200):
        action = rng.choice(["admit", "fork", "append", "append", "release"])
        if action == "admit" or not rows:
            rows.append(pool.admit())
            contents.append([])
        elif action == "fork":
            i = rng.randrange(len(rows))
            rows.append(pool.fork(rows[i]))
            contents.append(list(contents[i]))
        elif action == "append":
            i = rng.randrange(len(rows))
            contents[i].append(_fill(pool, rows[i], rng.randint(1, 9), float(step * 1000)))
        else:
            i = rng.randrange(len(rows))
            pool.release(rows.pop(i))
            contents.pop(i)
        references = [0] * pool.capacity
        for row in rows:
            assert len(row.blocks) == pool.blocks_for(row.length)
            for block in row.blocks:
                references[block] += 1
        assert references == pool.refcounts
        assert sorted(pool.free) == [b for b, n in enumerate(references) if n == 0]
    for row, parts in zip(rows, contents, strict=True):
        keys, _ = pool.gather(0, row)
        expected = torch.cat(parts, dim=1) if parts else torch.empty(2, 0, 4)
        assert torch.equal(keys, expected)
    for row in rows:
        pool.release(row)
    assert pool.used == 0 and all(n == 0 for n in pool.refcounts)


@pytest.mark.parametrize("seed", range(2))
def test_random_admit_fork_append_release_keeps_refcounts_exact(seed):
    _random_round(seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(2, 14))
def test_random_refcounts_many_rounds(seed):
    _random_round(seed)
