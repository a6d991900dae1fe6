"""Shared prefixes: reference counts free the KV with the last holder; the store hands its reference over."""

from __future__ import annotations

import pytest
import torch

from seal_hub.generation.hf.cache import PrefixStore, SharedPrefix


def _filled(ids: tuple[int, ...], layers: int = 2) -> SharedPrefix:
    shared = SharedPrefix(ids, layers)
    like = torch.zeros(1, 2, 1, 4)
    for layer in range(layers):
        keys, values = shared.tensors(layer, like, like)
        keys.fill_(layer + 1.0)
        values.fill_(-(layer + 1.0))
    return shared


def test_the_last_reference_frees_the_tensors():
    shared = _filled((1, 2, 3))
    assert shared.nbytes == 2 * 2 * (2 * 3 * 4) * 4
    rows = [shared.acquire() for _ in range(3)]
    assert shared.refs == 4
    shared.release()  # its maker lets go; the three rows still read it
    for row in rows[:-1]:
        row.release()
    assert shared.refs == 1 and shared.nbytes > 0 and shared.view(1, 2)[0].eq(2.0).all()
    rows[-1].release()
    assert shared.freed and shared.nbytes == 0 and all(k is None for k in shared.keys)
    with pytest.raises(RuntimeError, match="released more times"):
        shared.release()
    with pytest.raises(RuntimeError, match="freed"):
        shared.acquire()


def test_a_prefix_serves_requests_it_is_a_prefix_of_or_that_are_its_prefix():
    shared = _filled((5, 6, 7, 8))
    assert shared.serves((5, 6, 7, 8, 9)) == 4  # the whole prefix, the rest is the row's own
    assert shared.serves((5, 6)) == 2  # a shorter view of the same tensors
    assert shared.serves((5, 9, 7, 8)) == 0 and shared.serves(()) == 0


def test_the_store_is_bounded_by_bytes_and_hands_its_reference_over():
    a, b = _filled((1, 2)), _filled((3, 4))
    store = PrefixStore(max_bytes=a.nbytes)  # room for one
    assert store.put(a) and a.refs == 2
    a.release()  # the row that held it goes: the store's reference keeps it
    assert store.put(b) and store.evictions == 1 and a.freed  # the store held a's last reference
    b.release()
    taken = store.take((3, 4, 5))
    assert taken is not None and taken[0] is b and taken[1] == 2 and b.refs == 1 and len(store) == 0
    assert store.nbytes == 0 and store.take((3, 4)) is None
    assert not PrefixStore(max_bytes=0).put(b)
    store.put(b)
    store.clear()
    assert b.refs == 1  # the store's reference went; the taker's stays
