"""Executable tool environments, one package per suite, speaking the records of `protocol`.

Each suite implements the contract of `suite.py` (tasks, splits, episodes, turn labels, warm-up, whether it trains,
its card); `builtin.py` names the built-in ones. Nothing outside a suite's own package speaks for it.

bfcl-eval writes result, score and lock folders under `BFCL_PROJECT_ROOT` as soon as its config is imported,
and that defaults to its own install folder (site-packages). Importing this package first points it at a
writable cache folder of ours unless the user set it: `$XDG_CACHE_HOME/seal_hub/bfcl_eval` (else
`~/.cache/seal_hub/bfcl_eval`). Nothing an episode writes goes there: the memory suite keeps its files in a
temporary folder per episode.
"""

import os
from pathlib import Path

if "BFCL_PROJECT_ROOT" not in os.environ:
    _cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    os.environ["BFCL_PROJECT_ROOT"] = str(_cache / "seal_hub" / "bfcl_eval")
