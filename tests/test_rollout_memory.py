"""HFBackend's KV rows: exact against the reference when rows move, finish early or come back; the prefix store's
byte bound."""

from __future__ import annotations

import pytest
from baselines import SequentialBackend
from helpers.tiny_rows import tiny_causal_lm, tokens

from seal_hub.generation.backend import GenerationRequest, SamplingConfig
from seal_hub.generation.hf import HFBackend

GREEDY = SamplingConfig(temperature=0, max_new_tokens=6)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_causal_lm(tmp_path_factory.mktemp("tiny"))


def reference(model, requests, sampling, eos=(1,)):
    return SequentialBackend(model, eos).generate(requests, sampling)


def assert_same(fast, slow):
    for a, b in zip(fast, slow, strict=True):
        assert a.token_ids == b.token_ids and a.finished == b.finished
        assert max((abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)), default=0) < 1e-4


@pytest.mark.parametrize("max_new_tokens", [6, 30], ids=["finished_rows_ride_along", "finished_rows_swap_out"])
def test_rows_that_end_early_leave_the_others_exact(tiny, max_new_tokens):
    prefix = tokens(0, 40)
    requests = [GenerationRequest(f"s{i}", prefix + tokens(i + 1, 3 + 7 * i), len(prefix)) for i in range(4)]
    sampling = SamplingConfig(temperature=0, max_new_tokens=max_new_tokens)
    unstopped = reference(tiny, requests, sampling)
    eos = (unstopped[0].token_ids[2],)  # the first row ends on its third token, the others run on (or end there too)
    backend = HFBackend(tiny, eos)
    fast = backend.generate(requests, sampling)
    assert fast[0].finished and len(fast[0].token_ids) <= 3
    assert_same(fast, reference(tiny, requests, sampling, eos))
    if max_new_tokens >= 30 and not all(g.finished for g in fast[1:]):
        assert backend.rows.swaps > 0
    # the next step of every episode reuses its row: only the new tokens are prefilled
    prefilled = backend.prefilled_tokens
    follow = [
        GenerationRequest(r.session, r.token_ids + g.token_ids + tokens(9, 4), len(prefix))
        for r, g in zip(requests, fast, strict=True)
    ]
    assert_same(backend.generate(follow, GREEDY), reference(tiny, follow, GREEDY, eos))
    assert backend.prefilled_tokens - prefilled == 4 * len(follow)


def test_released_rows_leave_and_their_prefix_is_reused_exactly(tiny):
    prefix = tokens(0, 48)
    first = [GenerationRequest(f"a{i}", prefix + tokens(i + 1, 5), len(prefix)) for i in range(3)]
    backend = HFBackend(tiny, [1])
    backend.generate(first, GREEDY)
    assert len(backend.rows.rows) == 3
    backend.release("a0")
    backend.release("a1")
    # a1 and a0 leave; a2 goes on and a new rollout of the same task copies the prefix from a live row
    second = [GenerationRequest("a2", first[2].token_ids + tokens(7, 3), len(prefix))]
    second.append(GenerationRequest("b0", prefix + tokens(8, 6), len(prefix)))
    reused = backend.reused_tokens
    assert_same(backend.generate(second, GREEDY), reference(tiny, second, GREEDY))
    assert len(backend.rows.rows) == 2 and backend.reused_tokens - reused >= len(prefix)
    assert len(backend.prefixes) == 0  # live rows hold the prefix: no second copy in the store


def test_the_prefix_store_is_bounded_by_bytes_and_hands_entries_over(tiny):
    prefixes = [tokens(100 + t, 64) for t in range(3)]
    backend = HFBackend(tiny, [1])
    per_token = None
    for task, prefix in enumerate(prefixes):
        request = GenerationRequest(f"t{task}", prefix + tokens(task, 4), len(prefix))
        backend.generate([request], GREEDY)
        per_token = per_token or backend.rows.bytes_per_token()
        backend.prefixes.max_bytes = int(1.5 * 64 * per_token)  # room for one 64-token prefix, not two
        backend.release(request.session)
    # each call's layout moved the released row's prefix into the store, evicting the one before
    backend.generate([GenerationRequest("last", tokens(999, 10))], GREEDY)
    store = backend.prefixes
    assert len(store) == 1 and prefixes[2] in store and store.evictions == 2
    assert 0 < store.nbytes <= store.max_bytes
    # a new rollout of the stored task takes its prefix: it leaves the store (one copy) and outputs stay exact
    again = [GenerationRequest("t2-again", prefixes[2] + tokens(55, 5), len(prefixes[2]))]
    reused = backend.reused_tokens
    assert_same(backend.generate(again, GREEDY), reference(tiny, again, GREEDY))
    assert backend.reused_tokens - reused == len(prefixes[2]) and prefixes[2] not in store and store.nbytes == 0


def test_a_prefix_larger_than_the_bound_is_not_stored(tiny):
    backend = HFBackend(tiny, [1], max_prefix_bytes=0)
    prefix = tokens(3, 32)
    backend.generate([GenerationRequest("x", prefix + tokens(4, 3), len(prefix))], GREEDY)
    backend.release("x")
    backend.generate([GenerationRequest("y", tokens(5, 8))], GREEDY)
    assert len(backend.prefixes) == 0 and backend.prefixes.nbytes == 0


def test_bad_arguments_fail_with_a_clear_message(tiny):
    with pytest.raises(ValueError, match="max_prefix_bytes"):
        HFBackend(tiny, [1], max_prefix_bytes=-1)
    backend = HFBackend(tiny, [1])
    with pytest.raises(ValueError, match="same session"):
        backend.generate([GenerationRequest("s", (5, 6)), GenerationRequest("s", (7, 8))], GREEDY)


def test_each_row_reserves_its_own_length_and_grows_past_it_exactly(tiny):
    from seal_hub.generation.hf.step import CAPACITY_STEP

    short, long = tokens(20, 10), tokens(21, 4 * CAPACITY_STEP)
    requests = [GenerationRequest("short", short), GenerationRequest("long", long)]
    sampling = SamplingConfig(temperature=0, max_new_tokens=2 * CAPACITY_STEP + 10)  # past what a layout reserves
    backend = HFBackend(tiny, [-1])  # no end-of-turn token: every row decodes its whole budget
    assert_same(backend.generate(requests, sampling), reference(tiny, requests, sampling, eos=(-1,)))
    rows = {row.session: row for row in backend.rows.rows}
    assert rows["short"].capacity < len(long) <= rows["long"].capacity
    assert rows["short"].keys[0].shape[2] == rows["short"].capacity  # the short row's tensors are its own size
    # both rows decoded past what a layout reserves (the call's decode batch held the new tokens): each row's
    # tail came back sized to all it holds
    assert (
        rows["long"].capacity
        >= len(long) + 2 * CAPACITY_STEP
        > rows["short"].capacity
        >= len(short) + 2 * CAPACITY_STEP
    )


def test_the_models_attention_is_restored_after_generating_even_on_error(tiny):
    original = tiny.config._attn_implementation
    backend = HFBackend(tiny, [1])
    backend.generate([GenerationRequest("a", tokens(30, 12))], GREEDY)
    assert tiny.config._attn_implementation == original
    with pytest.raises(ValueError, match="empty prompt"):
        backend.generate([GenerationRequest("b", ())], GREEDY)

    def broken(*args, **kwargs):
        raise RuntimeError("forward failed")

    backend._forward = broken
    with pytest.raises(RuntimeError, match="forward failed"):
        backend.generate([GenerationRequest("c", tokens(31, 12))], GREEDY)
    assert tiny.config._attn_implementation == original


def test_rollouts_of_one_task_share_the_prompt_at_their_first_step(tiny):
    """G rollouts start with the same whole prompt as their prefix: one row prefills it (all but its last token,
    which is the decode loop's first input), the others copy it, and every output stays the reference's."""
    prompt = tokens(3, 37)
    requests = [GenerationRequest(f"g{i}", prompt, len(prompt)) for i in range(4)]
    backend = HFBackend(tiny, [1])
    assert_same(backend.generate(requests, GREEDY), reference(tiny, requests, GREEDY))
    assert backend.prefilled_tokens == len(prompt) - 1
    assert backend.reused_tokens == 3 * (len(prompt) - 1)
