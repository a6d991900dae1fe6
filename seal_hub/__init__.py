"""seal_hub: SEAL (co-evolving agents and learning environments) for LLM tool use, on TRL and the Hub.

Loading published artifacts by reference (`seal_hub.hub`): `load_interface("alice/run1-env@v3")`,
`load_trajectories(ref)`, `load_adapter(ref)`; `load_environment(ref)` gives an environment to step with that
interface applied (`seal_hub.environment`); `resolve_reference(ref, kind)` pins a reference to its commit
(`seal_hub.hub.sources`). They are imported on first use, so ``import seal_hub`` stays cheap.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "load_interface": "seal_hub.hub.loading",
    "load_trajectories": "seal_hub.hub.loading",
    "load_adapter": "seal_hub.hub.loading",
    "load_environment": "seal_hub.environment",
    "resolve_reference": "seal_hub.hub.sources",
}
__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'seal_hub' has no attribute {name!r}")
