"""Artifact references, versions, the registry protocol both backends implement, and the default backend.

A reference names a repository, optionally a backend, a repository type and a revision:

    [local:// | hf://] [models/ | datasets/] namespace/name [@revision]

- ``local://`` is the local registry (`seal_hub.hub.local`), ``hf://`` the Hugging Face Hub (`seal_hub.hub.hf`;
  the scheme is the one `huggingface_hub.HfFileSystem` uses). Without a scheme the default backend is used:
  ``$SEAL_HUB_BACKEND`` (``local`` or ``hub``) when set, else the Hub when a token (``HF_TOKEN`` or a saved
  login) or an endpoint (``HF_ENDPOINT``) is configured, else the local registry.
- ``models/`` and ``datasets/`` pick the repository type, as in Hub URLs; without it the caller's default is used
  (each artifact kind has one), or, where the caller has none, the one type under which the repository exists.
- the revision is a tag (a version, e.g. ``v3`` or ``iter-3``), a branch or a commit; without it, ``main``.

A version is a commit with a tag, pushed once and never changed (`Version`). Both backends implement `Registry`:
create a repository, push a folder as a new version, list versions in order, resolve a revision, and
download a revision into a local folder. Errors the user can fix are `HubError` (a `ValueError`), with the
reference in the message.

Not covered: building a backend's registry (`seal_hub.hub.backends`: both backends import this module), what goes
into a version (`seal_hub.hub.artifacts`), and copying between backends (`seal_hub.hub.sync`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, Protocol

RepoType = Literal["model", "dataset"]
Backend = Literal["local", "hub"]
REPO_TYPES: tuple[RepoType, ...] = ("model", "dataset")
SCHEMES: dict[str, Backend] = {"local://": "local", "hf://": "hub"}
BACKEND_ENV = "SEAL_HUB_BACKEND"
DEFAULT_BRANCH = "main"

_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
_REPO_ID = re.compile(rf"^{_NAME}/{_NAME}$")
_NAMESPACE = re.compile(rf"^{_NAME}$")
_REVISION = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9._/-]{0,199}$")
_TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class HubError(ValueError):
    """A registry operation the user can fix: a bad reference, a missing repository or revision, a clash."""


class RepoNotFoundError(HubError):
    pass


class RevisionNotFoundError(HubError):
    pass


class VersionExistsError(HubError):
    """The tag already names a version with other content: versions are immutable."""


@dataclass(frozen=True)
class Ref:
    """A repository (and optionally a revision) in one backend; `str(ref)` gives the reference back."""

    repo_id: str
    repo_type: RepoType | None = None
    revision: str | None = None
    backend: Backend | None = None

    def __post_init__(self) -> None:
        if not _REPO_ID.match(self.repo_id):
            raise HubError(
                f"repository id {self.repo_id!r} is not 'namespace/name' (letters, digits, '.', '_', '-'): "
                "write e.g. 'alice/run1-env@v3'"
            )
        if self.repo_type is not None and self.repo_type not in REPO_TYPES:
            raise HubError(f"repository type {self.repo_type!r} is not one of {', '.join(REPO_TYPES)}")
        if self.revision is not None and (not _REVISION.match(self.revision) or ".." in self.revision):
            raise HubError(
                f"revision {self.revision!r} of {self.repo_id!r} is not a tag, branch or commit name "
                "(letters, digits, '.', '_', '-', '/'; no '..')"
            )

    @classmethod
    def parse(cls, text: str, repo_type: RepoType | None = None) -> Ref:
        """Parse ``[scheme://][type/]namespace/name[@revision]``; `repo_type` is the default type."""
        rest, backend = text.strip(), None
        for scheme, name in SCHEMES.items():
            if rest.startswith(scheme):
                rest, backend = rest[len(scheme) :], name
        if "://" in rest:
            raise HubError(f"reference {text!r}: unknown scheme; use local:// or hf:// (or none for the default)")
        for prefix, kind in (("models/", "model"), ("datasets/", "dataset")):
            if rest.startswith(prefix) and rest.count("/") >= 2:
                rest, repo_type = rest[len(prefix) :], kind
        repo_id, at, revision = rest.partition("@")
        if at and not revision:
            raise HubError(f"reference {text!r}: nothing after '@'; give a tag, a branch or a commit")
        return cls(repo_id, repo_type, revision or None, backend)

    def at(self, revision: str | None) -> Ref:
        return replace(self, revision=revision)

    @property
    def scheme(self) -> str:
        return {"local": "local://", "hub": "hf://", None: ""}[self.backend]

    def __str__(self) -> str:
        kind = f"{self.repo_type}s/" if self.repo_type else ""
        return f"{self.scheme}{kind}{self.repo_id}" + (f"@{self.revision}" if self.revision else "")


@dataclass(frozen=True)
class Version:
    """One published version: its tag, the commit it names, and the commit message's first line."""

    tag: str
    commit: str
    title: str = ""


@dataclass(frozen=True)
class RepoListing:
    repo_type: RepoType
    repo_id: str
    versions: tuple[Version, ...] = field(default_factory=tuple)


def check_tag(tag: str) -> str:
    if not _TAG.match(tag):
        raise HubError(f"tag {tag!r} is not a version name (letters, digits, '.', '_', '-'; e.g. 'v3' or 'iter-3')")
    if re.fullmatch(r"[0-9a-f]{7,40}", tag):
        raise HubError(f"tag {tag!r} looks like a commit id; choose a name such as 'v3' or 'iter-3'")
    return tag


def check_namespace(namespace: str) -> str:
    if not _NAMESPACE.match(namespace):
        raise HubError(f"namespace {namespace!r} is not a user or organisation name")
    return namespace


class Registry(Protocol):
    """What both backends do. `repo_type` is always explicit here; `Ref.parse` and the loaders pick it."""

    backend: Backend

    def create_repo(self, repo_id: str, repo_type: RepoType) -> None: ...

    def repo_exists(self, repo_id: str, repo_type: RepoType) -> bool: ...

    def push(
        self,
        repo_id: str,
        repo_type: RepoType,
        folder: Path,
        *,
        tag: str,
        message: str,
        keep_existing: bool = False,
    ) -> Version:
        """Publish `folder` as version `tag` on ``main``, atomically. With `keep_existing` the files of the
        previous version that `folder` does not replace stay; otherwise the version holds exactly `folder`.
        Pushing the same content under an existing tag returns that version; other content raises
        `VersionExistsError`."""
        ...

    def versions(self, repo_id: str, repo_type: RepoType) -> list[Version]:
        """Tagged versions in publication order (oldest first)."""
        ...

    def resolve(self, ref: Ref) -> str:
        """The commit id `ref.revision` (default ``main``) names; `RevisionNotFoundError` naming the ref."""
        ...

    def download(self, ref: Ref) -> Path:
        """A local folder with the repository's files at `ref.revision` (read it, do not write to it)."""
        ...

    def list_repos(self, namespace: str | None = None) -> list[RepoListing]: ...


def configured_backend() -> Backend:
    """The backend of references without a scheme (see the module docstring)."""
    chosen = os.environ.get(BACKEND_ENV, "").strip().lower()
    if chosen:
        if chosen not in ("local", "hub"):
            raise HubError(f"{BACKEND_ENV}={chosen!r}: expected 'local' or 'hub' (or leave it unset)")
        return chosen  # type: ignore[return-value]
    if os.environ.get("HF_ENDPOINT"):
        return "hub"
    from huggingface_hub import get_token

    return "hub" if get_token() else "local"


def with_type(ref: Ref, registry: Registry, default: RepoType | None = None) -> Ref:
    """`ref` with its repository type filled in: its own, else `default`, else the one type it exists under."""
    if ref.repo_type is not None:
        return ref
    if default is not None:
        return replace(ref, repo_type=default)
    found = [kind for kind in REPO_TYPES if registry.repo_exists(ref.repo_id, kind)]
    if len(found) == 1:
        return replace(ref, repo_type=found[0])
    if not found:
        raise RepoNotFoundError(f"{ref}: no such repository in the {registry.backend} registry")
    raise HubError(f"{ref}: both a model and a dataset repository have this id; write models/... or datasets/...")
