"""Published artifacts as sources: a reference resolved once to an immutable commit, and loaded from that commit.

`resolve_reference(ref, kind)` is the one entry point. It parses the reference (`seal_hub.hub.registry`), asks the
registry once which commit the revision names now, downloads that commit (never the tag or branch again), loads the
object and returns a `Resolved`: the object, the `Source` (repository, revision as asked, commit) and the local
folder. Kinds: ``"environment"`` (an `InterfaceSnapshot` from a ``<run>-env`` dataset repository) and
``"adapter"`` (a `PublishedPolicy`: the policy folder, a PEFT adapter or a full fine-tune's model, and the base
model it names, read by `seal_hub.hub.policy.read_policy`, from a model repository); `read_interface` is the one
reading of a snapshot folder (`seal_hub.hub.loading.load_interface` calls it too). The
recipe (``--interface``, ``--init_adapter``), ``seal-hub rollout`` (``--interface``, ``--adapter``) and
`seal_hub.load_environment` all resolve through it, so every consumer pins and records the same way. A missing
repository or revision fails at once with a `HubError` naming what exists: the repository's versions, or the
namespace's repositories of that type with their versions.

A run records its sources in ``<output_dir>/sources.json`` (`RunSources`, written by `run_sources`): a relaunch
re-opens the recorded commits instead of resolving again (a branch that moved meanwhile cannot change a running
experiment), and a different reference is refused. The trainer passes them to the cards of all three artifacts.

Design choices: `derive_interface` makes a run's first snapshot from a published one by re-rooting it: the same
components, rho and cause, the same version number (so the run's own evolutions continue at the next number), no
parent in the run's lineage, and `origin` naming the source at its commit; its rendering is the source's, byte for
byte. `check_base_model` compares an adapter's base with the policy by id (a converted local stand-in counts as the
id it stands in for; a revision only when both name one) and fails with one line naming both. `attach_policy`
puts a policy on that base, the one place in the package that does (PEFT's adapter, or a full fine-tune's weights
loaded in place: the same architecture; so `seal-hub eval --adapter`, `seal-hub rollout --adapter` and
``--init_adapter`` take both kinds); `seal_hub.hub.loading.load_policy_version` loads the base and calls it.

Not covered: publishing (`seal_hub.hub.artifacts`), trajectory datasets as sources (`load_trajectories`), and
merging adapters for export.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from seal_hub.atomic import write_json
from seal_hub.hub.backends import registry_for
from seal_hub.hub.policy import PublishedPolicy, read_policy
from seal_hub.hub.registry import (
    DEFAULT_BRANCH,
    Backend,
    HubError,
    Ref,
    Registry,
    RepoNotFoundError,
    RepoType,
    with_type,
)

if TYPE_CHECKING:
    from peft import PeftModel

    from seal_hub.interface import InterfaceSnapshot

Kind = Literal["environment", "adapter"]
KIND_TYPES: dict[Kind, RepoType] = {"environment": "dataset", "adapter": "model"}
SOURCES_FILE = "sources.json"
HUB_URL = "https://huggingface.co"
T = TypeVar("T")


class SourceError(ValueError):
    """A source the user can fix: an adapter of another base model, a relaunch naming another reference."""


@dataclass(frozen=True)
class Source:
    """One resolved reference: which repository, the revision as asked, and the commit it named then."""

    role: Kind
    repo_id: str
    repo_type: RepoType
    backend: Backend
    revision: str
    commit: str

    @property
    def ref(self) -> str:
        return f"{self.repo_id}@{self.revision}"

    @property
    def pinned(self) -> Ref:
        """The reference at the commit: what every later read uses."""
        return Ref(self.repo_id, self.repo_type, self.commit, self.backend)

    @property
    def url(self) -> str | None:
        """The Hub page of the commit (None for the local registry, whose commits the Hub does not have)."""
        if self.backend != "hub":
            return None
        prefix = "datasets/" if self.repo_type == "dataset" else ""
        return f"{HUB_URL}/{prefix}{self.repo_id}/tree/{self.commit}"

    def describe(self) -> str:
        return f"{self.ref} (commit {self.commit})"

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Source:
        return cls(**{name: str(data[name]) for name in cls.__dataclass_fields__})  # type: ignore[arg-type]


@dataclass(frozen=True)
class Resolved(Generic[T]):
    """What `resolve_reference` returns: the loaded object, where it came from, and its local files."""

    value: T
    source: Source
    folder: Path


def _existing(registry: Registry, ref: Ref) -> str:
    """The namespace's repositories of `ref`'s type, with their versions (best effort, for an error message)."""
    try:
        listings = [r for r in registry.list_repos(ref.repo_id.split("/")[0]) if r.repo_type == ref.repo_type]
    except (HubError, OSError):
        return "(could not list the namespace)"
    shown = [f"{r.repo_id} ({', '.join(v.tag for v in r.versions) or 'no versions'})" for r in listings]
    return "; ".join(shown) or "none"


def read_interface(folder: Path, where: str) -> InterfaceSnapshot:
    """The interface snapshot an environment version's folder holds: the one reading of a published snapshot
    (`load_interface` and `resolve_reference` both call it); a folder without one is a one-line `HubError`."""
    from seal_hub.hub.artifacts import INTERFACE_FILE
    from seal_hub.interface import load_snapshot

    if not (folder / INTERFACE_FILE).is_file():
        raise HubError(f"{where}: this revision holds no {INTERFACE_FILE}; is it an environment (<run>-env) repo?")
    return load_snapshot(folder / INTERFACE_FILE)


def _load(kind: Kind, folder: Path, where: str) -> Any:
    return read_interface(folder, where) if kind == "environment" else read_policy(folder, where)


def resolve_reference(ref: str | Ref, kind: Kind, *, registry: Registry | None = None) -> Resolved[Any]:
    """Resolve `ref` once to a commit, download that commit, and load it as `kind` (see the module docstring)."""
    if kind not in KIND_TYPES:
        raise ValueError(f"kind={kind!r} is not one of {', '.join(KIND_TYPES)}")
    parsed = ref if isinstance(ref, Ref) else Ref.parse(ref, KIND_TYPES[kind])
    registry = registry or registry_for(parsed)
    parsed = with_type(parsed, registry, KIND_TYPES[kind])
    if parsed.repo_type != KIND_TYPES[kind]:
        raise HubError(f"{ref}: an {kind} lives in a {KIND_TYPES[kind]} repository, not a {parsed.repo_type} one")
    try:
        commit = registry.resolve(parsed)
    except RepoNotFoundError:
        raise RepoNotFoundError(
            f"{ref}: no {kind} repository {parsed.repo_id} in the {registry.backend} registry; "
            f"{parsed.repo_type} repositories of {parsed.repo_id.split('/')[0]}: {_existing(registry, parsed)}"
        ) from None
    source = Source(
        kind, parsed.repo_id, parsed.repo_type, registry.backend, parsed.revision or DEFAULT_BRANCH, commit
    )
    return open_source(source, registry=registry)


def open_source(source: Source, *, registry: Registry | None = None) -> Resolved[Any]:
    """Load a recorded `Source` from its commit (no resolution: the commit is immutable)."""
    from seal_hub.hub.backends import get_registry

    registry = registry or get_registry(source.backend)
    folder = registry.download(source.pinned)
    return Resolved(_load(source.role, folder, source.describe()), source, folder)


# ----- a run's first interface and policy -----


def derive_interface(resolved: Resolved[InterfaceSnapshot]) -> InterfaceSnapshot:
    """A run's first snapshot from a published one: re-rooted (no parent), same version, `origin` set."""
    from seal_hub.interface import InterfaceSnapshot, Origin

    snapshot, source = resolved.value, resolved.source
    if not re.fullmatch(r"v\d+", snapshot.version):
        raise SourceError(
            f"{source.describe()} holds environment version {snapshot.version!r}; a SEAL run numbers its versions "
            "'v<number>' and continues from the source's: pick a 'v<number>' version"
        )
    origin = Origin(
        ref=source.ref,
        repo_id=source.repo_id,
        revision=source.revision,
        commit=source.commit,
        version=snapshot.version,
        parent=snapshot.parent,
        content_hash=snapshot.content_hash,
    )
    data = snapshot.model_dump() | {"parent": None, "origin": origin, "content_hash": ""}
    return InterfaceSnapshot.model_validate(data)


def _model_identity(name: str) -> tuple[str, str | None]:
    """(id, revision) of a model name: a local directory by its resolved path, or the id it stands in for."""
    from seal_hub.models import parse_model_id
    from seal_hub.models.demo import CONVERSION_NOTE

    path = Path(name).expanduser()
    if path.exists():
        note = path / CONVERSION_NOTE
        if note.is_file():
            stands_in_for = json.loads(note.read_text(encoding="utf-8")).get("stands_in_for")
            if stands_in_for:
                return stands_in_for, None
        return str(path.resolve()), None
    return parse_model_id(name)


def check_base_model(adapter: Resolved[PublishedPolicy], model: str, revision: str | None = None) -> None:
    """Fail with one line naming both when the adapter was trained on another base model than `model` (a Hub
    id, a path, or the packaged policies' names 'demo' and 'tiny')."""
    from seal_hub.models import DEMO_MODEL_ID, cache_root

    model = {"demo": DEMO_MODEL_ID, "tiny": str(cache_root() / "tiny-policy")}.get(model, model)
    if not adapter.value.base_model:
        raise SourceError(f"{adapter.source.describe()}: its card names no base model to check {model!r} against")
    want_id, want_revision = _model_identity(adapter.value.base)
    have_id, have_revision = _model_identity(model)
    have_revision = revision if revision not in (None, "main") else have_revision
    if adapter.value.local_base:  # the card names a local base by its folder's name only: compare names
        have_id = Path(have_id).name
    same = want_id == have_id and (want_revision is None or have_revision is None or want_revision == have_revision)
    if not same:
        theirs = want_id + (f"@{want_revision}" if want_revision else "")
        ours = have_id + (f"@{have_revision}" if have_revision else "")
        raise SourceError(
            f"adapter {adapter.source.describe()} was trained on base model {theirs!r}, but the policy is {ours!r}: "
            f"load {theirs!r} (model_name_or_path) or choose an adapter of {ours!r}"
        )


def attach_policy(
    model: Any, policy: Resolved[PublishedPolicy] | PublishedPolicy, *, trainable: bool = False, merge: bool = False
):
    """`model` with the policy loaded on it: the one place a policy goes onto a loaded base (every command, the
    Space, the experiment and `seal_hub.load_adapter` come here). An adapter: PEFT's, with its own LoRA
    configuration; `merge` folds it into the weights. A full fine-tune's version replaces `model`'s weights in place
    (its base: same architecture and shapes) and returns `model`; `trainable` and `merge` change nothing there."""
    from peft import PeftModel

    published = policy.value if isinstance(policy, Resolved) else policy
    where = policy.source.describe() if isinstance(policy, Resolved) else published.where or str(published.folder)
    if published.kind == "full":
        from seal_hub.hub.policy import load_weights

        try:
            load_weights(model, published.folder)
        except (RuntimeError, ValueError) as exc:  # shapes or parameters that do not fit this base
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise SourceError(f"full model {where} does not fit this base: {first}") from None
        return model
    try:
        peft_model: PeftModel = PeftModel.from_pretrained(model, str(published.folder), is_trainable=trainable)
    except (RuntimeError, ValueError, KeyError) as exc:  # shapes or modules that do not fit this base
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SourceError(f"adapter {where} does not fit this base model: {first}") from None
    return peft_model.merge_and_unload() if merge else peft_model


# ----- what a run records -----


@dataclass(frozen=True)
class RunSources:
    """The published artifacts a run started from, as recorded in ``<output_dir>/sources.json``."""

    environment: Source | None = None
    adapter: Source | None = None

    def all(self) -> list[Source]:
        return [s for s in (self.environment, self.adapter) if s is not None]

    def write(self, output_dir: str | Path) -> Path:
        data = {"environment": self.environment, "adapter": self.adapter}
        data = {role: None if source is None else source.to_dict() for role, source in data.items()}
        return write_json(Path(output_dir) / SOURCES_FILE, data)

    @classmethod
    def read(cls, output_dir: str | Path) -> RunSources:
        """The recorded sources (none when the run recorded none); a damaged file is a one-line error."""
        path = Path(output_dir) / SOURCES_FILE
        if not path.is_file():
            return cls()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(**{role: Source.from_dict(s) if s else None for role, s in data.items()})
        except (ValueError, TypeError, KeyError) as exc:
            raise SourceError(
                f"{path} is damaged ({type(exc).__name__}: {exc}); restore it or use a new output_dir"
            ) from None


def _has_checkpoint(output_dir: Path) -> bool:
    return any(p.is_dir() and p.name.split("-")[-1].isdigit() for p in output_dir.glob("checkpoint-*"))


def _same(given: str, recorded: Source) -> bool:
    ref = Ref.parse(given, recorded.repo_type)
    return (ref.repo_id, ref.revision or DEFAULT_BRANCH) == (recorded.repo_id, recorded.revision) and (
        ref.backend in (None, recorded.backend)
    )


def run_sources(
    output_dir: str | Path, *, interface: str | None = None, adapter: str | None = None
) -> tuple[RunSources, Resolved[InterfaceSnapshot] | None, Resolved[PublishedPolicy] | None]:
    """Resolve a run's sources once and record them; a relaunch re-opens what it recorded (module docstring).

    A relaunch without the flags keeps the recorded sources; a different reference, or a reference added to a run
    that already has checkpoints without it, is refused with the fix.
    """
    output_dir = Path(output_dir)
    recorded = RunSources.read(output_dir)
    resuming = output_dir.is_dir() and _has_checkpoint(output_dir)
    opened: dict[str, Resolved[Any] | None] = {}
    for role, flag, given in (("environment", "--interface", interface), ("adapter", "--init_adapter", adapter)):
        kept: Source | None = getattr(recorded, role)
        if kept is not None:
            if given is not None and not _same(given, kept):
                raise SourceError(
                    f"{flag} {given}: the run in {output_dir} started from {kept.describe()}; relaunch with "
                    f"{flag} {kept.ref}, or start a new run in another output_dir"
                )
            opened[role] = open_source(kept)
        elif given is not None:
            if resuming:
                raise SourceError(
                    f"{flag} {given}: the run in {output_dir} already has checkpoints and started without it; "
                    "drop the flag to resume, or start a new run in another output_dir"
                )
            opened[role] = resolve_reference(given, role)  # type: ignore[arg-type]
        else:
            opened[role] = None
    sources = RunSources(*(r.source if r is not None else None for r in (opened["environment"], opened["adapter"])))
    if sources.all() and sources != recorded:
        sources.write(output_dir)
    return sources, opened["environment"], opened["adapter"]
