"""Packed prefill: rows' new tokens packed into forwards of at most a chunk, cut at each row's shared-prefix
boundary; several rows' answers in one forward stay exact."""

from __future__ import annotations

import pytest
from baselines import SequentialBackend
from helpers.tiny_rows import tiny_causal_lm, tokens

from seal_hub.generation.backend import GenerationRequest, SamplingConfig
from seal_hub.generation.hf import HFBackend
from seal_hub.generation.hf.step import Piece, pack

GREEDY = SamplingConfig(temperature=0, max_new_tokens=5)


def test_pieces_fill_each_forward_and_never_straddle_a_prefix_boundary():
    # row 0 fills a 10-token shared prefix and goes on to 14; row 1 prefills 3..9; row 2 has no shared prefix
    forwards = pack([(0, 0, 14, 10), (1, 3, 9, 0), (2, 0, 5, 0)], chunk=8)
    assert [sum(p.size for p in f) for f in forwards] == [8, 8, 8, 1]
    pieces = [p for f in forwards for p in f]
    assert pieces[:3] == [Piece(0, 0, 8, 0), Piece(0, 8, 10, 0), Piece(0, 10, 14, 2)]
    assert all(not (p.begin < 10 < p.end) for p in pieces if p.row == 0)
    for f in forwards:  # offsets run through each forward's packed sequence
        assert [p.offset for p in f] == [sum(q.size for q in f[:i]) for i in range(len(f))]
    covered = {row: sorted((p.begin, p.end) for p in pieces if p.row == row) for row in range(3)}
    assert covered[1] == [(3, 5), (5, 9)] and covered[2] == [(0, 4), (4, 5)]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_causal_lm(tmp_path_factory.mktemp("tiny"))


def test_the_next_steps_answers_of_several_rows_share_one_forward_exactly(tiny):
    prompts = [tokens(1, 40), tokens(2, 40)]
    requests = [GenerationRequest(f"p{i}", prompts[i % 2], 40) for i in range(4)]
    backend = HFBackend(tiny, [1])
    first = backend.generate(requests, GREEDY)
    follow = [
        GenerationRequest(r.session, r.token_ids + g.token_ids + tokens(10 + i, 7 + 5 * i), 40)
        for i, (r, g) in enumerate(zip(requests, first, strict=True))
    ]
    forwards = {"n": 0}
    forward = backend._forward

    def counted(*args, **kwargs):
        forwards["n"] += 1
        return forward(*args, **kwargs)

    backend._forward = counted
    steps = backend.decode_steps
    fast = backend.generate(follow, GREEDY)
    slow = SequentialBackend(tiny, (1,)).generate(follow, GREEDY)
    for a, b in zip(fast, slow, strict=True):
        assert a.token_ids == b.token_ids and a.finished == b.finished
        assert max((abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)), default=0) < 1e-4
    assert forwards["n"] - (backend.decode_steps - steps) == 1  # the four rows' new tokens: one prefill forward
