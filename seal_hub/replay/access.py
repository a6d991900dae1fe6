"""What a visitor of the replay Space may open and run: free on one's own machine, an allowlist when deployed.

`Access` checks every visitor input before it is used; a refusal is a `ReplayError` whose line never repeats
more than a short prefix of the input (`seal_hub.replay.quiet.cut`):

- local (``seal-hub space``): runs, directories and policies as typed (today's freedom), inputs capped at
  `LOCAL_CAP` characters;
- deployed (a Hugging Face Space, or ``seal-hub space --public``): runs only in the allowed namespaces or runs
  (`runs`: ``NS`` or ``NS/RUN``, by default the deployed run's namespace) of the deployed run's backend, never a
  directory; live policies only from `policies`, the allowlist fixed at deploy time; inputs capped at
  `PUBLIC_CAP` characters and revisions of tag shape.

`space_policies(run, revision)` computes that allowlist from what a run published: ``tiny``, its adapters at the
tags up to the pinned iteration (``hf://NS/RUN-adapter@iter-k``) and the base model each one names.

Design choice: checks are by exact membership and by the shape of a reference, done before anything touches the
filesystem, the registry or the network, so a refused input has loaded, fetched and probed nothing.

Not covered: how errors are worded for the page (`seal_hub.replay.quiet`), memory bounds (`seal_hub.replay.policies`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from seal_hub.hub.registry import _REPO_ID, HubError, Ref, configured_backend
from seal_hub.replay.episodes import ReplayError
from seal_hub.replay.quiet import cut

LOCAL_CAP = 1024
PUBLIC_CAP = 120
TINY = "tiny"
_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_ITER = re.compile(r"^iter-(\d+)$")
_SCHEMES = {"local": "local://", "hub": "hf://"}


@dataclass(frozen=True)
class Access:
    """The rules for one Space process (see the module docstring); `public` False means local freedom."""

    public: bool = False
    runs: tuple[str, ...] = ()  # deployed: allowed namespaces (NS) or runs (NS/RUN)
    backend: str = "local"  # deployed: the registry runs are read from
    policies: tuple[str, ...] = (TINY, "demo")  # the live policies offered (deployed: the only ones)

    def __post_init__(self) -> None:
        if self.public and not self.runs:
            raise ValueError("a deployed Space needs the runs it may show (runs=('NS',) or ('NS/RUN',))")
        if self.public and not self.policies:
            raise ValueError("a deployed Space needs at least one live policy (policies=('tiny',))")

    @property
    def cap(self) -> int:
        return PUBLIC_CAP if self.public else LOCAL_CAP

    def text(self, value: object, name: str) -> str:
        """`value` as a stripped string, refused when longer than the cap."""
        text = ("" if value is None else str(value)).strip()
        if len(text) > self.cap:
            raise ReplayError(f"{name} {cut(text)!r} is {len(text)} characters long; at most {self.cap} are read")
        return text

    def run(self, value: object, name: str = "run") -> str:
        """The run to open: as typed (local), or a checked ``[scheme://]NS/RUN[@REV]`` (deployed); "" for none."""
        spec = self.text(value, name)
        if not self.public or not spec:
            return spec
        if spec.startswith(("/", ".", "~")) or "\\" in spec or ".." in spec:
            example = f" such as {self.runs[0]}/RUN" if "/" not in self.runs[0] else f" such as {self.runs[0]}"
            raise ReplayError(f"{name}: this Space opens published runs (NS/RUN{example}), not directories")
        try:
            ref = Ref.parse(spec)
        except HubError:
            raise ReplayError(f"{name} {cut(spec)!r} is not a run reference (NS/RUN)") from None
        if ref.backend not in (None, self.backend):
            raise ReplayError(f"{name} {cut(spec)!r}: this Space reads runs from the {self.backend} registry only")
        if ref.repo_id not in self.runs and ref.repo_id.split("/")[0] not in self.runs:
            raise ReplayError(f"{name} {cut(spec)!r} is not offered here (runs of: {', '.join(self.runs)})")
        revision = f"@{self.revision(ref.revision)}" if ref.revision else ""
        # without a scheme a run means this Space's registry (named only where the default would differ)
        scheme = ref.scheme or ("" if configured_backend() == self.backend else _SCHEMES[self.backend])
        return f"{scheme}{ref.repo_id}{revision}"

    def revision(self, value: object, name: str = "revision") -> str:
        """A revision as typed (local), or one of tag shape (deployed)."""
        text = self.text(value, name)
        if self.public and text and not _REVISION.match(text):
            raise ReplayError(f"{name}: not a revision name (letters, digits, '.', '_', '-'; e.g. main or iter-2)")
        return text

    def policy(self, value: object) -> str:
        """A live policy: any name, path or adapter reference (local), or one of `policies` (deployed)."""
        name = self.text(value, "policy") or TINY
        if self.public and name not in self.policies:
            raise ReplayError(f"policy {cut(name)!r} is not offered here (choose one of: {', '.join(self.policies)})")
        return name


def deployed(run: str, runs: tuple[str, ...] = (), policies: tuple[str, ...] = (TINY,)) -> Access:
    """The deployed rules for a Space showing `run`: its namespace unless `runs` lists others."""
    ref = Ref.parse(run)
    return Access(
        public=True,
        runs=runs or (ref.repo_id.split("/")[0],),
        backend=ref.backend or configured_backend(),
        policies=policies or (TINY,),
    )


def space_policies(run: str, revision: str = "") -> tuple[str, ...]:
    """``tiny``, then each adapter of `run` up to iteration `revision` (all when none) and its base model."""
    from seal_hub.hub import RunRepos, fetch
    from seal_hub.hub.backends import registry_for
    from seal_hub.hub.policy import read_policy

    ref = Ref.parse(run)
    adapters = Ref(RunRepos.of(ref.repo_id).adapter, "model", None, ref.backend)
    registry = registry_for(adapters)
    if not registry.repo_exists(adapters.repo_id, "model"):
        return (TINY,)
    limit = _iteration(revision or ref.revision or "")
    found: list[str] = [TINY]
    for version in registry.versions(adapters.repo_id, "model"):
        number = _iteration(version.tag)
        if limit is not None and (number is None or number > limit):
            continue
        policy = read_policy(fetch(adapters.at(version.tag), "model"), str(adapters.at(version.tag)))
        base, base_revision = policy.base_model, policy.base_revision
        adapter = f"{_SCHEMES[registry.backend]}{adapters.repo_id}@{version.tag}"
        local = registry.backend == "local" and Path(base).expanduser().is_dir()  # a Hub Space cannot load one
        if base and (local or _REPO_ID.match(base)):  # a full model whose card names no base: none to list
            found.append(f"{base}@{base_revision}" if base_revision else base)
        found.append(adapter)
    return tuple(dict.fromkeys(found))


def _iteration(tag: str) -> int | None:
    found = _ITER.match(tag)
    return int(found.group(1)) if found else None
