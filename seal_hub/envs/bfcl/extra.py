"""The `bfcl` extra: the BFCL suites' one dependency beyond the core, and the one line that says how to get it.

The BFCL suites (`bfcl`, `bfcl-single`, `bfcl-memory`) read their tasks, function docs, API classes and official
checkers from bfcl-eval, which is not part of seal_hub's core install: it pins numpy 1.26.4 and brings the SDKs of
many model providers. It comes with `pip install "seal_hub[bfcl]"`. Every module of these packages imports without
it (so the registry of built-in suites can list them and read their facts); building a suite, or the official
checker, needs it, and `require_bfcl_eval` fails there with one line that names the extra instead of a traceback.

Not covered: the tau2 extra (`seal_hub.envs.tau2_telecom.tasks.require_tau2`).
"""

from __future__ import annotations

import importlib.util

from seal_hub.envs.suite import SuiteError

BFCL_INSTALL = 'pip install "seal_hub[bfcl]"'


BFCL_SUITES = ("bfcl", "bfcl-single", "bfcl-memory")


def require_bfcl_eval() -> None:
    """Nothing when bfcl-eval is installed; else a one-line `SuiteError` that names the extra to install."""
    if importlib.util.find_spec("bfcl_eval") is None:
        raise SuiteError(
            f"the BFCL suites ({', '.join(BFCL_SUITES)}) need the bfcl extra, and bfcl-eval is not installed: "
            f"{BFCL_INSTALL}"
        )
