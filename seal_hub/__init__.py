"""seal_hub: SEAL (co-evolving agents and learning environments) for LLM tool use, on TRL and the Hub.

Training: `SealConfig` (TRL's GRPOConfig plus SEAL's fields) and `SealTrainer` (`seal_hub.training`, GRPOTrainer's
arguments: a TRL script changes two names) on a TRL setup or a suite's tasks, e.g. `BfclSuite`
(`seal_hub.envs.bfcl`, with the `bfcl` extra); publishing is the callback `PublishCallback(PublishConfig(run=...))`;
the packaged script runs them end to end (`seal-hub train`, `seal_hub.scripts.seal`). Loading published artifacts
by reference (`seal_hub.hub`): `load_interface("alice/run1-env@v3")`, `load_trajectories(ref)`, `load_adapter(ref)`,
`load_model(ref)` (a published policy of either kind: adapter or full fine-tune); `load_environment(ref)` gives an
environment to step with that interface applied (`seal_hub.environment`); `resolve_reference(ref, kind)`
pins a reference to its commit (`seal_hub.hub.sources`).

Every name is imported on first use, so ``import seal_hub`` stays cheap (no torch, TRL or datasets), and importing
it or any of these names prints nothing: the one notice a dependency prints while it is imported (bitsandbytes, on
``import peft``, about a CPU kernel seal_hub never uses) is filtered here (`seal_hub.console.quiet_import_notices`).
`__version__` is the installed distribution's version (pyproject.toml is its one source).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from seal_hub._lazy import lazy_exports
from seal_hub.console import quiet_import_notices

quiet_import_notices()

try:
    __version__ = version("seal_hub")
except PackageNotFoundError:  # a checkout on sys.path that was never installed
    __version__ = "0+unknown"

_LAZY = {
    "SealConfig": "seal_hub.training",
    "SealTrainer": "seal_hub.training",
    "PublishCallback": "seal_hub.hub.callback",
    "PublishConfig": "seal_hub.hub.artifacts",
    "BfclSuite": "seal_hub.envs.bfcl",
    "load_interface": "seal_hub.hub.loading",
    "load_trajectories": "seal_hub.hub.loading",
    "load_adapter": "seal_hub.hub.loading",
    "load_model": "seal_hub.hub.loading",
    "load_environment": "seal_hub.environment",
    "resolve_reference": "seal_hub.hub.sources",
}
__all__ = ["__version__", *_LAZY]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
