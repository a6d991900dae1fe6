"""The C heap's free pages go back to the system between generate calls (glibc's malloc_trim)."""

from __future__ import annotations

import ctypes.util
import os
import platform

import pytest
import torch

from seal_hub.generation.hf.step import give_back


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's heap only")
def test_freed_blocks_between_live_ones_go_back():
    assert ctypes.util.find_library("c")
    give_back()
    # 256 KiB blocks sit in the heap (below glibc's mmap threshold); every tenth one stays alive, so the freed ones
    # lie between live blocks, where the heap cannot shrink by itself
    blocks = [torch.ones(64 * 1024) for _ in range(800)]
    kept = blocks[::10]
    del blocks
    before = resident_bytes()
    assert give_back()
    after = resident_bytes()
    assert before - after > 100 * 2**20  # most of the 180 MiB freed comes back
    assert all(bool((block == 1).all()) for block in kept)  # the live blocks are untouched
