"""HFBackend's rows share their task prefix: held once per group, freed with its last row, never written by a row
that diverges, dropped whole by a call cut short; outputs stay the reference's throughout."""

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


def assert_same(model, requests, fast, sampling=GREEDY, eos=(1,)):
    slow = SequentialBackend(model, eos).generate(requests, sampling)
    for a, b in zip(fast, slow, strict=True):
        assert a.token_ids == b.token_ids and a.finished == b.finished
        assert max((abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)), default=0) < 1e-4


def test_a_groups_rows_hold_the_prompt_once(tiny):
    from seal_hub.generation.hf.step import CAPACITY_STEP

    prompt = tokens(1, 2 * CAPACITY_STEP)
    requests = [GenerationRequest(f"g{i}", prompt, len(prompt)) for i in range(4)]
    backend = HFBackend(tiny, [1])
    assert_same(tiny, requests, backend.generate(requests, GREEDY))
    rows = backend.rows.rows
    shared = rows[0].shared
    assert shared is not None and all(r.shared is shared for r in rows) and shared.refs == 4
    assert backend.rows.shared_prefixes == 1 and backend.rows.shared_uses == 3
    per_token = backend.rows.bytes_per_token()
    assert shared.nbytes == (len(prompt) - 1) * per_token
    tails = sum(r.nbytes for r in rows)
    assert backend.rows.nbytes == shared.nbytes + tails  # memory counts the prompt once, not once per row
    # each row's own part is its slot of the call (the prompt's last token and what it could decode), not a copy
    # of the prompt
    assert tails == 4 * (1 + GREEDY.max_new_tokens) * per_token < 4 * shared.nbytes


def test_the_shared_prefix_is_freed_when_the_last_row_lets_go(tiny):
    prompt = tokens(2, 40)
    requests = [GenerationRequest(f"r{i}", prompt, len(prompt)) for i in range(3)]
    backend = HFBackend(tiny, [1], max_prefix_bytes=0)  # no store: nothing keeps it past its rows
    backend.generate(requests, GREEDY)
    shared = backend.rows.rows[0].shared
    backend.release("r0")
    backend.release("r1")
    other = [GenerationRequest("r2", requests[2].token_ids + tokens(3, 4), len(prompt))]
    assert_same(tiny, other, backend.generate(other, GREEDY))
    assert shared.refs == 1 and not shared.freed  # r2 still reads it
    backend.release("r2")
    backend.generate([GenerationRequest("x", tokens(4, 9))], GREEDY)
    assert shared.freed and shared.nbytes == 0 and len(backend.prefixes) == 0


def test_with_a_store_the_last_row_hands_the_prefix_over_and_a_later_group_reuses_it(tiny):
    prompt = tokens(5, 48)
    backend = HFBackend(tiny, [1])
    first = [GenerationRequest(f"a{i}", prompt, len(prompt)) for i in range(2)]
    backend.generate(first, GREEDY)
    shared = backend.rows.rows[0].shared
    for request in first:
        backend.release(request.session)
    backend.generate([GenerationRequest("x", tokens(6, 9))], GREEDY)
    assert len(backend.prefixes) == 1 and shared.refs == 1  # only the store holds it now
    prefilled = backend.prefilled_tokens
    second = [GenerationRequest(f"b{i}", prompt, len(prompt)) for i in range(3)]
    assert_same(tiny, second, backend.generate(second, GREEDY))
    assert backend.prefilled_tokens == prefilled  # the whole prompt came from the store: nothing prefilled
    assert all(r.shared is shared for r in backend.rows.rows[:3]) and shared.refs == 3 and len(backend.prefixes) == 0


def test_a_row_that_diverges_inside_the_prefix_leaves_it_unwritten(tiny):
    """Copy-on-write: the diverging row keeps the common part as a shorter view and writes after it into its own
    tail; the shared tensors and the other rows' outputs stay exactly what they were."""
    prompt = tokens(7, 50)
    requests = [GenerationRequest(f"d{i}", prompt, len(prompt)) for i in range(3)]
    backend = HFBackend(tiny, [1])
    out = backend.generate(requests, GREEDY)
    shared = backend.rows.rows[0].shared
    before = [k.clone() for k in shared.keys]
    edited = prompt[:30] + tokens(8, 25)  # d1's sequence now differs from position 30 on
    follow = [
        GenerationRequest("d0", prompt + out[0].token_ids + tokens(9, 3), len(prompt)),
        GenerationRequest("d1", edited, 30),
        GenerationRequest("d2", prompt + out[2].token_ids + tokens(10, 3), len(prompt)),
    ]
    assert_same(tiny, follow, backend.generate(follow, GREEDY))
    rows = {r.session: r for r in backend.rows.rows}
    assert rows["d1"].shared is shared and rows["d1"].shared_length == 30
    assert rows["d0"].shared_length == rows["d2"].shared_length == len(prompt) - 1
    assert all(k.equal(b) for k, b in zip(shared.keys, before, strict=True))


def test_interleaved_groups_and_rows_that_finish_early_stay_exact(tiny):
    """Rows of two tasks alternate (each group's rows not contiguous) and some end early (their slots ride
    along in the tails' call): every row's output is still the reference's."""
    prompts = [tokens(11, 33), tokens(12, 45)]
    requests = [
        GenerationRequest(f"i{i}", prompts[i % 2] + tokens(20 + i, 2 + i), len(prompts[i % 2])) for i in range(6)
    ]
    sampling = SamplingConfig(temperature=0, max_new_tokens=24)
    unstopped = SequentialBackend(tiny, (1,)).generate(requests, sampling)
    eos = (unstopped[1].token_ids[3],)
    backend = HFBackend(tiny, eos)
    assert_same(tiny, requests, backend.generate(requests, sampling), sampling, eos)
    assert backend.rows.shared_prefixes == 2


def test_a_call_cut_short_drops_its_rows_and_the_next_call_is_exact(tiny):
    prompt = tokens(13, 40)
    requests = [GenerationRequest(f"k{i}", prompt, len(prompt)) for i in range(3)]
    backend = HFBackend(tiny, [1], max_prefix_bytes=0)
    forward, calls = backend._forward, {"n": 0}

    def interrupted(*args, **kwargs):  # the third decode step never finishes
        calls["n"] += 1
        if calls["n"] == 4:  # one prefill forward, then decode steps
            raise KeyboardInterrupt
        return forward(*args, **kwargs)

    backend._forward = interrupted
    with pytest.raises(KeyboardInterrupt):
        backend.generate(requests, GREEDY)
    assert backend.rows.rows == [] and backend.rows.step is None  # nothing partial kept
    backend._forward = forward
    assert_same(tiny, requests, backend.generate(requests, GREEDY))


def test_rows_alone_on_their_prefix_decode_whole_in_one_call_and_keep_it(tiny):
    """100 tasks x 1 rollout: each row is its prefix's only holder, so its slot holds the whole row (no prefix
    groups: one attention call per layer); the prefix comes back intact for the next step and for a new rollout."""
    prompts = [tokens(30 + t, 20 + 7 * t) for t in range(3)]
    requests = [GenerationRequest(f"w{t}", p, len(p)) for t, p in enumerate(prompts)]
    backend = HFBackend(tiny, [1])
    begin = backend.rows.begin_decode
    batches = []

    def recorded(count, room):
        batches.append(begin(count, room))
        return batches[-1]

    backend.rows.begin_decode = recorded
    out = backend.generate(requests, GREEDY)
    assert_same(tiny, requests, out)
    assert all(batches[0].whole) and batches[0].groups == []
    rows = {r.session: r for r in backend.rows.rows}
    for t, p in enumerate(prompts):
        shared = rows[f"w{t}"].shared
        assert shared.refs == 1 and all(k is not None and k.shape[2] == len(p) - 1 for k in shared.keys)
    follow = [
        GenerationRequest(r.session, r.token_ids + g.token_ids + tokens(40, 3), r.prefix_length)
        for r, g in zip(requests, out, strict=True)
    ]
    follow.append(GenerationRequest("w0-again", prompts[0], len(prompts[0])))  # shares w0's prefix now
    assert_same(tiny, follow, backend.generate(follow, GREEDY))
    assert batches[-1].whole == [False, True, True, False]  # w0 and its new rollout read the prefix as a group


def test_tasks_that_share_a_start_borrow_it_instead_of_prefilling_it(tiny):
    from seal_hub.generation.hf.cache import MIN_BORROW

    start = tokens(20, MIN_BORROW + 70)  # the system prompt and tool schemas tasks of one class share
    prompts = [start + tokens(21 + i, 30 + 5 * i) for i in range(3)]
    requests = [GenerationRequest(f"t{i}/{g}", p, len(p)) for i, p in enumerate(prompts) for g in range(2)]
    backend = HFBackend(tiny, [1])
    assert_same(tiny, requests, backend.generate(requests, GREEDY))  # one call: lender first, borrowers after
    shared = {id(r.shared): r.shared for r in backend.rows.rows}
    assert len(shared) == 3 and all(p.borrowed is None and p.refs == 2 for p in shared.values())
    assert backend.rows.borrowed_positions == 2 * len(start)  # the two later tasks copied the common start
    whole = sum(len(p) - 1 for p in prompts)
    assert backend.prefilled_tokens == whole - 2 * len(start)
    # a later call borrows from a prefix filled before it (live rows' or the store's), and from nothing shorter
    later = [GenerationRequest("t3", start + tokens(30, 12), len(start) + 12)]
    assert_same(tiny, later, backend.generate(later, GREEDY))
    assert backend.rows.borrowed_positions == 3 * len(start)
    unrelated = [GenerationRequest("u", start[: MIN_BORROW - 1] + tokens(31, 40), MIN_BORROW + 39)]
    assert_same(tiny, unrelated, backend.generate(unrelated, GREEDY))
    assert backend.rows.borrowed_positions == 3 * len(start)  # too short a common start: prefilled whole


def test_a_lender_whose_last_row_leaves_is_kept_until_the_copy_then_freed(tiny):
    from seal_hub.generation.hf.cache import SharedPrefix

    start = tokens(40, 100)
    backend = HFBackend(tiny, [1], max_prefix_bytes=0)  # no store: a released row's prefix goes at the next layout
    backend.generate([GenerationRequest("a", start + tokens(41, 20), 120)], GREEDY)
    backend.release("a")
    lender = backend.rows.rows[0].shared
    # the next layout borrows from row "a"'s prefix and then drops that row: only the borrow holds the lender
    second = [GenerationRequest("b", start + tokens(42, 25), 125), GenerationRequest("c", tokens(43, 30), 30)]
    assert_same(tiny, second, backend.generate(second, GREEDY))
    assert backend.rows.borrowed_positions == 100
    assert lender.freed and lender.nbytes == 0  # let go once copied
    with pytest.raises(ValueError, match="only positions whose tokens it shares"):
        SharedPrefix(tokens(44, 10), 2).borrow(SharedPrefix(tokens(45, 10), 2), 5)


def test_a_call_cut_short_before_the_copy_lets_the_lender_go(tiny, monkeypatch):
    start = tokens(50, 100)
    backend = HFBackend(tiny, [1], max_prefix_bytes=0)
    backend.generate([GenerationRequest("a", start + tokens(51, 10), 110)], GREEDY)
    lender = backend.rows.rows[0].shared
    monkeypatch.setattr(backend.rows, "fill_borrowed", lambda count: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        backend.generate([GenerationRequest("b", start + tokens(52, 10), 110)], GREEDY)
    assert lender.refs == 1  # row "a" alone: the borrower's reference went with the dropped call
    monkeypatch.undo()
    retry = [GenerationRequest("b", start + tokens(52, 10), 110)]
    assert_same(tiny, retry, backend.generate(retry, GREEDY))


def test_rows_left_decoding_attend_alone_exactly(tiny):
    """Rows end at 2, 4, 8 and 16 tokens: the steps run all four in one padded call, then three with the finished
    row riding along, then one call per row left (two of four, then one); the tokens stay the reference's."""
    shared = tokens(40, 30)
    requests = [
        GenerationRequest("a0", shared + tokens(41, 3), len(shared), max_new_tokens=2),  # two rollouts of one task
        GenerationRequest("a1", shared + tokens(42, 5), len(shared), max_new_tokens=8),
        GenerationRequest("b0", tokens(43, 50), 50, max_new_tokens=4),  # tasks alone on their prefix
        GenerationRequest("c0", tokens(44, 20), 20, max_new_tokens=16),
    ]
    sampling = SamplingConfig(temperature=0, max_new_tokens=16)
    # an end token no row generates: every row runs to its own limit
    unused = next(
        e
        for e in range(1, 100)
        if not any(g.finished for g in SequentialBackend(tiny, (e,)).generate(requests, sampling))
    )
    backend = HFBackend(tiny, [unused])
    assert_same(tiny, requests, backend.generate(requests, sampling), sampling, eos=(unused,))
    assert backend.decode_steps == 16
    assert backend.per_row_steps == 12  # steps 5-16: two rows of four decoding, then one
