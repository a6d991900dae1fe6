"""Shared fixtures (shared helpers that are not fixtures: tests/helpers/). Tests run offline: nothing here may
reach a network."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def _session_registry(tmp_path_factory):
    """A test or fixture that publishes without naming a registry writes here, never into the user's
    ``~/.cache/seal_hub/registry`` (a run published there by the README's demo made a test's run name taken). Not
    one per test: an app a module fixture serves in this process reads the registry its fixture set."""
    patch = pytest.MonkeyPatch()
    patch.setenv("SEAL_HUB_REGISTRY", str(tmp_path_factory.mktemp("session-registry")))
    yield
    patch.undo()


@pytest.fixture(scope="session")
def suite():
    """BFCL multi-turn's 800 tasks; a test that asks for them skips where the bfcl extra is not installed."""
    from helpers.extras import require_bfcl

    from seal_hub.envs.bfcl import BfclSuite

    require_bfcl()
    return BfclSuite()
