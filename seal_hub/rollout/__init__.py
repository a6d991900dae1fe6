"""Multi-turn rollouts: batched generation with KV caching, episodes stepped in the environment, trajectories.

The names below are imported on first use, so ``seal_hub.rollout.hf_backend`` (the batched backend: torch and
transformers only) imports where the engine's and the records' dependencies (datasets, pyarrow, pydantic) are not
installed, as `benchmarks/gpu_check.py` needs on a bare GPU machine.

Not here: the plain backends the batched one is measured and tested against (one request at a time, transformers'
padded and continuous batching) and the loopback `vllm serve` of the checks: benchmark and test code, in
`benchmarks/baselines.py` and `benchmarks/local_server.py`.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "PolicyInfo": "seal_hub.rollout.engine",
    "RolloutConfig": "seal_hub.rollout.engine",
    "RolloutEngine": "seal_hub.rollout.engine",
    "TemplateError": "seal_hub.rollout.engine",
    "HFBackend": "seal_hub.rollout.hf_backend",
    "build_hf_backend": "seal_hub.rollout.hf_backend",
    "FEATURES": "seal_hub.rollout.records",
    "Trajectory": "seal_hub.rollout.records",
    "read_trajectories": "seal_hub.rollout.records",
    "write_trajectories": "seal_hub.rollout.records",
}
__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'seal_hub.rollout' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
