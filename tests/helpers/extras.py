"""The optional extras a test module needs: skip it, with the install line as reason, where one is missing.

The default test run (README, `.ci/run`) installs the `bfcl` extra, so nothing skips there; a checkout installed
without it (`pip install -e ".[test]"`) skips the modules that build a BFCL suite, each once, by this reason.
"""

from __future__ import annotations

import pytest

BFCL_MISSING = 'the BFCL suites need the bfcl extra (bfcl-eval is not installed): pip install "seal_hub[bfcl]"'


def require_bfcl() -> None:
    """Skip the calling test module (call it at module level) where bfcl-eval is not installed."""
    pytest.importorskip("bfcl_eval", reason=BFCL_MISSING)
