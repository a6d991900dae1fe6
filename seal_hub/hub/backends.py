"""Choosing a registry: the local one (`seal_hub.hub.local`) or the Hugging Face Hub (`seal_hub.hub.hf`).

`get_registry(backend)` builds the registry of a backend (``None``: the configured default,
`seal_hub.hub.registry.configured_backend`), `registry_for(ref)` the one a reference names (its ``local://`` or
``hf://`` scheme, else the default). Why a module of its own: both backends import `seal_hub.hub.registry` (the
references and the protocol they implement), so the function that builds them lives above all three, and the
imports run one way (registry <- local, hf <- backends).

Not covered: the references and the protocol (`seal_hub.hub.registry`), each backend's behaviour.
"""

from __future__ import annotations

from seal_hub.hub.hf import HubRegistry
from seal_hub.hub.local import LocalRegistry
from seal_hub.hub.registry import Backend, Ref, Registry, configured_backend


def get_registry(backend: Backend | None = None) -> Registry:
    """The registry of `backend` (``None``: the configured default), configured from the environment."""
    backend = backend or configured_backend()
    return LocalRegistry() if backend == "local" else HubRegistry()


def registry_for(ref: Ref) -> Registry:
    """The registry `ref` names (its scheme), else the configured default."""
    return get_registry(ref.backend)
