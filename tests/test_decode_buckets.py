"""A generate call's rows decode in buckets of similar length (`seal_hub.generation.hf.step.plan`): the cut is the
best one, rows of very different lengths stay exact, and the call's storage is handed to its rows as views, then let
go."""

from __future__ import annotations

import itertools
import random

import pytest
from baselines import SequentialBackend
from helpers.tiny_rows import tiny_causal_lm, tokens

from seal_hub.generation.backend import GenerationRequest, SamplingConfig
from seal_hub.generation.hf import HFBackend
from seal_hub.generation.hf.step import plan


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_causal_lm(tmp_path_factory.mktemp("tiny"))


def cost(buckets, needs, call):
    return sum(len(b) * max(needs[s] for s in b) + call for b in buckets)


def partitions(items):
    """Every set partition of `items` (Bell numbers: 203 for six)."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for smaller in partitions(rest):
        for i in range(len(smaller)):
            yield smaller[:i] + [[first, *smaller[i]]] + smaller[i + 1 :]
        yield [[first], *smaller]


def test_the_plan_is_the_cheapest_of_every_partition():
    rng = random.Random(0)
    for _ in range(40):
        needs = [rng.choice([rng.randrange(1, 50), rng.randrange(100, 1000)]) for _ in range(rng.randrange(1, 7))]
        call = rng.choice([0, 16, 256, 10**6])
        buckets = plan(needs, call)
        assert sorted(itertools.chain(*buckets)) == list(range(len(needs)))  # every slot once
        assert all(b == sorted(b) for b in buckets)
        best = min(cost(p, needs, call) for p in partitions(list(range(len(needs)))))
        assert cost(buckets, needs, call) == best
    assert plan([], 256) == []
    assert len(plan([900, 880, 100, 90, 95], 256)) == 2  # the short rows are not padded to the long ones
    assert len(plan([900, 880, 100, 90, 95], 10**6)) == 1  # a call dearer than any padding: one bucket


def test_rows_of_very_different_lengths_decode_in_buckets_exactly(tiny):
    """Whole rows and a shared-prefix group of very different lengths, some ending early: several buckets, some of
    them attending row by row, every output the sequential reference's."""
    prompts = [tokens(1, 8), tokens(2, 300), tokens(3, 12), tokens(4, 310), tokens(5, 150)]
    requests = [GenerationRequest(f"w{i}", p, len(p)) for i, p in enumerate(prompts)]
    requests += [GenerationRequest(f"g{i}", prompts[4] + tokens(10 + i, 3 * i), len(prompts[4])) for i in range(3)]
    sampling = SamplingConfig(temperature=0, max_new_tokens=20)
    unstopped = SequentialBackend(tiny, (1,)).generate(requests, sampling)
    eos = (unstopped[0].token_ids[4], unstopped[3].token_ids[9])
    backend = HFBackend(tiny, eos)
    begin, batches = backend.rows.begin_decode, []
    backend.rows.begin_decode = lambda count, room: batches.append(begin(count, room)) or batches[-1]
    fast = backend.generate(requests, sampling)
    slow = SequentialBackend(tiny, eos).generate(requests, sampling)
    for a, b in zip(fast, slow, strict=True):
        assert a.token_ids == b.token_ids and a.finished == b.finished
        assert max((abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)), default=0) < 1e-4
    assert any(not g.finished for g in fast) and any(g.finished for g in fast)
    (batch,) = batches
    assert len(batch.buckets) >= 2
    assert batch.size < len(requests) * max(b.capacity for b in batch.buckets)  # less than one padded call


def test_the_calls_storage_is_handed_to_its_rows_and_the_store_keeps_its_own_copy(tiny):
    prompts = [tokens(20 + i, 40 + 30 * i) for i in range(4)]
    requests = [GenerationRequest(f"s{i}", p, len(p)) for i, p in enumerate(prompts)]
    backend = HFBackend(tiny, [1])
    backend.generate(requests, SamplingConfig(temperature=0, max_new_tokens=6))
    rows = backend.rows.rows
    storages = {r.keys[0].untyped_storage().data_ptr() for r in rows}
    assert len(storages) == 1  # every row's layer 0 is a view of the call's one storage: nothing copied back
    for r in rows:  # whole rows: the prefix is the slot's start, the tail right after it, in place
        assert r.shared.keys[0].untyped_storage().data_ptr() in storages
        assert r.capacity >= r.tail_length
    for r in requests:
        backend.release(r.session)
    backend.generate([GenerationRequest("next", tokens(30, 9))], SamplingConfig(temperature=0, max_new_tokens=2))
    assert len(backend.prefixes) == 4
    for shared in backend.prefixes.entries():  # compacted: a kept prefix does not pin the call's storage
        assert all(k.untyped_storage().nbytes() == k.nbytes for k in (*shared.keys, *shared.values))
    again = [GenerationRequest("s3-again", prompts[3] + tokens(40, 4), len(prompts[3]))]
    fast = backend.generate(again, SamplingConfig(temperature=0, max_new_tokens=6))
    slow = SequentialBackend(tiny, (1,)).generate(again, SamplingConfig(temperature=0, max_new_tokens=6))
    assert fast[0].token_ids == slow[0].token_ids
