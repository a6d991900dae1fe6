"""Versioned artifacts of a SEAL run, on a local git registry or the Hugging Face Hub, with one API.

- References and the backend protocol: `Ref` (``[local://|hf://][models/|datasets/]namespace/name[@revision]``),
  `Version`, `Registry` (`registry.py`), `get_registry` (`backends.py`); the backends `LocalRegistry` (`local.py`,
  bare git repositories) and `HubRegistry` (`hf.py`, `huggingface_hub`).
- Publishing the three artifacts with cross-linked cards: `publish_trajectories`, `publish_interface`,
  `publish_policy`, `publish_iteration`, `RunRepos`, `PublishConfig` (`artifacts.py`; cards in `cards.py` from
  the templates in the top-level `model_cards/`, shipped as `seal_hub.model_cards`).
- Loading by reference: `load_interface` (the one interface loader: a reference or a snapshot file),
  `load_trajectories`, `load_adapter`, `load_model` (either policy kind), `fetch`, and `load_policy_version`, the one
  policy loader they, the Space and the experiment call (`loading.py`); what a policy version holds, adapter or full
  model, and the base it names: `read_policy`, `PublishedPolicy`, `policy_kind`, `policy_files` (`policy.py`).
- Reusing published artifacts as a run's sources, pinned to a commit: `resolve_reference` (a reference to the
  object, its `Source` and its commit), `RunSources`, `run_sources`, `derive_interface`, `check_base_model`,
  `attach_policy` (`sources.py`).
- Copying between registries: `sync_repo`, `sync_namespace` (`sync.py`); the CLI group `seal-hub hub` (`commands.py`).

Importing this package is cheap: `datasets`, `huggingface_hub`, `peft` and torch load when a function needs them.
"""

from seal_hub.hub.artifacts import (
    PublishConfig,
    RunRepos,
    iteration_tag,
    publish_interface,
    publish_iteration,
    publish_policy,
    publish_trajectories,
)
from seal_hub.hub.backends import get_registry
from seal_hub.hub.cards import EvalScore, Link
from seal_hub.hub.hf import HubRegistry
from seal_hub.hub.loading import (
    fetch,
    load_adapter,
    load_interface,
    load_model,
    load_policy_version,
    load_trajectories,
)
from seal_hub.hub.local import LocalRegistry
from seal_hub.hub.policy import PublishedPolicy, policy_files, policy_kind, read_policy
from seal_hub.hub.registry import (
    HubError,
    Ref,
    Registry,
    RepoNotFoundError,
    RevisionNotFoundError,
    Version,
    VersionExistsError,
    configured_backend,
)
from seal_hub.hub.sources import (
    Resolved,
    RunSources,
    Source,
    SourceError,
    attach_policy,
    check_base_model,
    derive_interface,
    resolve_reference,
    run_sources,
)
from seal_hub.hub.sync import SyncReport, sync_namespace, sync_repo

__all__ = [
    "EvalScore",
    "HubError",
    "HubRegistry",
    "LocalRegistry",
    "Link",
    "PublishConfig",
    "PublishedPolicy",
    "Ref",
    "Registry",
    "RepoNotFoundError",
    "Resolved",
    "RevisionNotFoundError",
    "RunRepos",
    "RunSources",
    "Source",
    "SourceError",
    "SyncReport",
    "Version",
    "VersionExistsError",
    "attach_policy",
    "check_base_model",
    "configured_backend",
    "derive_interface",
    "fetch",
    "get_registry",
    "iteration_tag",
    "load_adapter",
    "load_interface",
    "load_model",
    "load_policy_version",
    "load_trajectories",
    "policy_files",
    "policy_kind",
    "publish_policy",
    "publish_interface",
    "publish_iteration",
    "publish_trajectories",
    "read_policy",
    "resolve_reference",
    "run_sources",
    "sync_namespace",
    "sync_repo",
]
