"""Shared fixtures (shared helpers that are not fixtures: tests/helpers/). Tests run offline: nothing here may
reach a network."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def suite():
    """BFCL multi-turn's 800 tasks; a test that asks for them skips where the bfcl extra is not installed."""
    from helpers.extras import require_bfcl

    from seal_hub.envs.bfcl import BfclSuite

    require_bfcl()
    return BfclSuite()
