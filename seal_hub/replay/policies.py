"""Loaded live policies, kept in a least-recently-used cache bounded by count and by bytes.

`PolicyCache(load, max_count, max_bytes).get(name)` returns a `LoadedPolicy` (model, tokenizer, its bytes): a
hit moves it to the back, a miss loads it with `load(name)`, then the oldest entries are dropped until at most
`max_count` remain and their weights total at most `max_bytes`. A policy larger than `max_bytes` on its own is
refused with one line once loaded, and not kept. `load_named(name)` is the loader the Space uses: ``tiny``,
``demo``, a published policy (a reference a registry holds, e.g. ``NS/RUN-adapter@iter-k``: an adapter on the base
model its card names, or a full fine-tune's model by itself, as its files say; `published_policy`), else a model id
or (local use only) a directory. Loading goes through the one policy loader (`seal_hub.hub.loading`).

Design choice: loads run one at a time under the cache's lock, so concurrent visitors never load two copies of
one policy nor several policies at once; an entry's size is its parameters' and buffers' bytes, which is what
the weights hold in memory. An evicted policy a running episode still uses stays alive until that episode ends,
so the peak is the budget plus, at most, one policy per running live episode.

Not covered: which names a visitor may ask for (`seal_hub.replay.access`), GPU placement.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seal_hub.replay.episodes import ReplayError
from seal_hub.replay.quiet import cut

if TYPE_CHECKING:
    from seal_hub.hub.policy import PublishedPolicy

MB = 1 << 20


@dataclass(frozen=True)
class LoadedPolicy:
    name: str
    model: Any
    tokenizer: Any
    nbytes: int


def weight_bytes(model: Any) -> int:
    """Bytes of a torch module's parameters and buffers."""
    tensors = [*model.parameters(), *model.buffers()]
    return sum(t.numel() * t.element_size() for t in tensors)


@dataclass
class PolicyCache:
    """At most `max_count` policies and `max_bytes` of weights; the least recently used go first."""

    load: Callable[[str], tuple[Any, Any]]
    max_count: int = 2
    max_bytes: int = 2048 * MB
    _entries: OrderedDict[str, LoadedPolicy] = field(default_factory=OrderedDict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if self.max_count < 1 or self.max_bytes < 1:
            raise ValueError(f"max_count and max_bytes must be >= 1, got {self.max_count} and {self.max_bytes}")

    def get(self, name: str) -> LoadedPolicy:
        with self._lock:
            if name in self._entries:
                self._entries.move_to_end(name)
                return self._entries[name]
            model, tokenizer = self.load(name)
            model.eval()
            loaded = LoadedPolicy(name, model, tokenizer, weight_bytes(model))
            if loaded.nbytes > self.max_bytes:
                raise ReplayError(
                    f"policy {cut(name)!r} holds {loaded.nbytes / MB:.0f} MB of weights, more than this Space's "
                    f"policy budget of {self.max_bytes / MB:.0f} MB"
                )
            self._entries[name] = loaded
            while len(self._entries) > self.max_count or self.nbytes > self.max_bytes:
                self._entries.popitem(last=False)
            return loaded

    @property
    def nbytes(self) -> int:
        return sum(entry.nbytes for entry in self._entries.values())

    def names(self) -> list[str]:
        """Loaded policies, least recently used first."""
        return list(self._entries)


def published_policy(name: str) -> PublishedPolicy | None:
    """The policy version `name` names when a registry holds it: the registry the reference names (``local://``,
    ``hf://``, else the configured one) has a model repository of that id, and the revision's files say what it is
    (`seal_hub.hub.policy.read_policy`: an adapter or a whole model). None for a name that is no reference, or,
    without a scheme, no repository of the configured registry (a model id: `load_policy` loads it); a scheme naming
    a registry without that repository is a `HubError`. Nothing is read into the name itself."""
    from seal_hub.hub import HubError, Ref
    from seal_hub.hub.backends import registry_for
    from seal_hub.hub.policy import read_policy
    from seal_hub.hub.registry import with_type

    try:
        ref = Ref.parse(name, "model")
    except (HubError, ValueError):
        return None
    registry = registry_for(ref)
    try:
        held = registry.repo_exists(ref.repo_id, "model")
    except HubError:  # the Hub switched off or out of reach: its cache may hold the version
        try:
            return read_policy(registry.download(with_type(ref, registry, "model")), name)
        except HubError:
            return None
    if not held and ref.backend is not None:  # local:// or hf:// names a registry: the name is no model id
        raise HubError(f"{name}: no model repository {ref.repo_id} in the {registry.backend} registry")
    return read_policy(registry.download(with_type(ref, registry, "model")), name) if held else None


def load_named(name: str) -> tuple[Any, Any]:
    """(model, tokenizer) of a policy name (see the module docstring); `ReplayError` when it cannot be loaded."""
    from seal_hub.hub import HubError
    from seal_hub.hub.loading import load_policy_version
    from seal_hub.models import load_policy, named_policy_config

    try:
        if name in ("tiny", "demo"):
            return load_policy(named_policy_config(name))
        if Path(name).expanduser().is_dir():
            return load_policy(named_policy_config(str(Path(name).expanduser())))
        published = published_policy(name)
        if published is not None:  # an adapter on the base its card names, or a whole model by itself
            return load_policy_version(published)
        return load_policy(named_policy_config(name))
    except (HubError, OSError, ValueError) as exc:
        raise ReplayError(f"policy {cut(name)!r} cannot be loaded: {str(exc).splitlines()[0]}") from None
