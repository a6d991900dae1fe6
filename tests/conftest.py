"""Shared fixtures. Tests run offline: nothing here may reach a network."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

# the SEAL paper's split file, as the package ships it (tests never read files outside the repository)
PAPER_SPLIT = Path(__file__).resolve().parents[1] / "seal_hub" / "envs" / "bfcl" / "data" / "paper_split.json"


@pytest.fixture(scope="session")
def suite():
    from seal_hub.envs.bfcl import BfclSuite

    return BfclSuite()
