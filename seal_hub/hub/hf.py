"""The Hugging Face Hub backend: the same `Registry` protocol as the local registry, through `huggingface_hub`.

A version is one commit on ``main`` made with `HfApi.upload_folder` and a tag made with `HfApi.create_tag`;
versions are read back with `list_repo_refs` (tags) ordered by `list_repo_commits`, and revisions are downloaded
with `snapshot_download` into the Hugging Face cache (keyed by commit, so a tag always reads what it named).

Design choices:

- The endpoint, the token and the cache are read when the registry is made, not when `huggingface_hub` is
  imported: ``HF_ENDPOINT`` (else the library's default), the library's own token lookup (``HF_TOKEN`` or a
  saved login; the token is never stored on this object or shown), ``HF_HUB_CACHE`` / ``HF_HOME``.
- A push passes ``parent_commit`` (the head it read), so two writers cannot silently overwrite each other: the
  Hub refuses the second commit. The commit is atomic on the Hub; a push interrupted before its tag exists
  leaves the previous tagged version the latest, and repeating the push finds the commit unchanged (the Hub
  skips empty commits) and only adds the tag.
- Every error leaving this module goes through `_scrub`, which blanks the token should a server echo it.

Not covered: pull requests, branches other than ``main`` for pushing, Xet-specific tuning (the library picks Xet
or LFS by itself), and private-repo access management.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from seal_hub.hub.registry import (
    DEFAULT_BRANCH,
    HubError,
    Ref,
    RepoListing,
    RepoNotFoundError,
    RepoType,
    RevisionNotFoundError,
    Version,
    VersionExistsError,
    check_namespace,
    check_tag,
)

T = TypeVar("T")


def git_blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _cache_dir() -> str:
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return str(Path(os.environ["HF_HOME"]) / "hub")
    from huggingface_hub import constants

    return constants.HF_HUB_CACHE


class HubRegistry:
    """Repositories on a Hugging Face Hub endpoint (see the module docstring)."""

    backend = "hub"

    def __init__(self, endpoint: str | None = None, token: str | None = None, private: bool | None = None) -> None:
        from huggingface_hub import HfApi, constants

        self.endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
        self.private = private
        self._token = token
        self._api = HfApi(endpoint=self.endpoint, token=token)

    def __repr__(self) -> str:
        return f"HubRegistry({self.endpoint!r})"

    def _secret(self) -> str | None:
        from huggingface_hub import get_token

        return self._token or get_token()

    def _scrub(self, text: str) -> str:
        secret = self._secret()
        return text.replace(secret, "***") if secret else text

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        """Run a Hub call; turn its failures into `HubError`s that name `what` and never the token."""
        from huggingface_hub import errors, is_offline_mode

        if is_offline_mode():
            from seal_hub.hub_reach import offline_reason

            raise HubError(
                f"{what}: the Hub is switched off in this process, {offline_reason()}; make {self.endpoint} "
                "reachable (unset HF_HUB_OFFLINE) and relaunch, or use a local:// reference"
            )
        try:
            return fn()
        except errors.RevisionNotFoundError:
            raise RevisionNotFoundError(
                self._scrub(f"{what}: no such tag, branch or commit on {self.endpoint}")
            ) from None
        except errors.RepositoryNotFoundError:
            raise RepoNotFoundError(
                self._scrub(f"{what}: no such repository on {self.endpoint} (or no access to it with this token)")
            ) from None
        except errors.HfHubHTTPError as exc:
            raise HubError(self._scrub(f"{what}: the Hub at {self.endpoint} answered: {exc}")) from None
        except OSError as exc:
            raise HubError(self._scrub(f"{what}: cannot reach {self.endpoint}: {exc}")) from None
        except RuntimeError as exc:  # the library wraps failed LFS uploads in RuntimeError
            cause = f" ({exc.__cause__})" if exc.__cause__ else ""
            raise HubError(self._scrub(f"{what}: {exc}{cause}")) from None

    def create_repo(self, repo_id: str, repo_type: RepoType) -> None:
        Ref(repo_id, repo_type)
        self._call(
            f"hf://{repo_type}s/{repo_id}",
            lambda: self._api.create_repo(repo_id, repo_type=repo_type, exist_ok=True, private=self.private),
        )

    def repo_exists(self, repo_id: str, repo_type: RepoType) -> bool:
        return self._call(f"hf://{repo_type}s/{repo_id}", lambda: self._api.repo_exists(repo_id, repo_type=repo_type))

    def _head(self, repo_id: str, repo_type: RepoType) -> str | None:
        refs = self._call(
            f"hf://{repo_type}s/{repo_id}", lambda: self._api.list_repo_refs(repo_id, repo_type=repo_type)
        )
        return next((b.target_commit for b in refs.branches if b.name == DEFAULT_BRANCH), None)

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
        check_tag(tag)
        where = f"hf://{repo_type}s/{repo_id}@{tag}"
        if not any(p.is_file() for p in Path(folder).rglob("*")):
            raise HubError(f"nothing to publish as {where}: {folder} holds no files")
        self.create_repo(repo_id, repo_type)
        existing = {v.tag: v for v in self.versions(repo_id, repo_type)}
        if tag in existing:
            if not self._same_content(repo_id, repo_type, existing[tag].commit, Path(folder), keep_existing):
                raise VersionExistsError(
                    f"{where} already exists with other content; versions are immutable: publish under a new tag"
                )
            return existing[tag]
        head = self._head(repo_id, repo_type)
        info = self._call(
            where,
            lambda: self._api.upload_folder(
                repo_id=repo_id,
                repo_type=repo_type,
                folder_path=str(folder),
                commit_message=message,
                delete_patterns=None if keep_existing else "*",
                parent_commit=head,
            ),
        )
        self._call(
            where,
            lambda: self._api.create_tag(
                repo_id, repo_type=repo_type, tag=tag, revision=info.oid, tag_message=message, exist_ok=False
            ),
        )
        return Version(tag, info.oid, message.splitlines()[0] if message else "")

    def _same_content(self, repo_id: str, repo_type: RepoType, commit: str, folder: Path, keep_existing: bool) -> bool:
        remote = {
            f.path: f
            for f in self._call(
                f"hf://{repo_type}s/{repo_id}@{commit}",
                lambda: list(self._api.list_repo_tree(repo_id, repo_type=repo_type, revision=commit, recursive=True)),
            )
            if hasattr(f, "blob_id")
        }
        local = {p.relative_to(folder).as_posix(): p for p in folder.rglob("*") if p.is_file()}
        for path, file in local.items():
            entry = remote.get(path)
            data = file.read_bytes()
            if entry is None:
                return False
            if entry.lfs is not None and entry.lfs.sha256 != hashlib.sha256(data).hexdigest():
                return False
            if entry.lfs is None and entry.blob_id != git_blob_sha(data):
                return False
        extra = set(remote) - set(local) - {".gitattributes"}
        return keep_existing or not extra

    def versions(self, repo_id: str, repo_type: RepoType) -> list[Version]:
        where = f"hf://{repo_type}s/{repo_id}"
        refs = self._call(where, lambda: self._api.list_repo_refs(repo_id, repo_type=repo_type))
        if not refs.tags:
            return []
        commits = self._call(where, lambda: self._api.list_repo_commits(repo_id, repo_type=repo_type))
        titles = {c.commit_id: c.title for c in commits}
        position = {c.commit_id: i for i, c in enumerate(reversed(commits))}
        tags = [Version(t.name, t.target_commit, titles.get(t.target_commit, "")) for t in refs.tags]
        return sorted(tags, key=lambda v: position.get(v.commit, len(position)))

    def resolve(self, ref: Ref) -> str:
        repo_type = ref.repo_type or "model"
        revision = ref.revision or DEFAULT_BRANCH
        try:
            info = self._call(
                str(ref), lambda: self._api.repo_info(ref.repo_id, repo_type=repo_type, revision=revision)
            )
        except RevisionNotFoundError:
            known = ", ".join(v.tag for v in self.versions(ref.repo_id, repo_type)) or "none yet"
            raise RevisionNotFoundError(
                f"{ref}: no tag, branch or commit {revision!r} in hf://{repo_type}s/{ref.repo_id} on {self.endpoint} "
                f"(versions: {known})"
            ) from None
        return info.sha

    def download(self, ref: Ref) -> Path:
        from huggingface_hub import is_offline_mode, snapshot_download

        repo_type = ref.repo_type or "model"
        revision = ref.revision or DEFAULT_BRANCH
        if is_offline_mode():  # the cache may hold it; the library answers from there
            try:
                return Path(
                    snapshot_download(ref.repo_id, repo_type=repo_type, revision=revision, cache_dir=_cache_dir())
                )
            except Exception as exc:  # any failure here means "not in the cache"
                raise HubError(
                    self._scrub(f"{ref}: not in the Hugging Face cache and HF_HUB_OFFLINE=1 ({type(exc).__name__})")
                ) from None
        commit = self.resolve(ref)
        path = self._call(
            str(ref),
            lambda: snapshot_download(
                ref.repo_id,
                repo_type=repo_type,
                revision=commit,
                endpoint=self.endpoint,
                token=self._token,
                cache_dir=_cache_dir(),
            ),
        )
        return Path(path)

    def list_repos(self, namespace: str | None = None) -> list[RepoListing]:
        if namespace is None:
            raise HubError("listing the Hub needs a namespace: e.g. hf://alice")
        check_namespace(namespace)
        found = []
        for repo_type, lister in (("model", self._api.list_models), ("dataset", self._api.list_datasets)):
            infos = self._call(f"hf://{repo_type}s/{namespace}", lambda lister=lister: list(lister(author=namespace)))
            for info in sorted(infos, key=lambda i: i.id):
                found.append(RepoListing(repo_type, info.id, tuple(self.versions(info.id, repo_type))))
        return found
