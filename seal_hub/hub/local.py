"""The local registry: one bare git repository per repo id, a commit and an annotated tag per version.

Layout: ``<root>/models/<namespace>/<name>.git`` and ``<root>/datasets/<namespace>/<name>.git``, where the root
is ``$SEAL_HUB_REGISTRY``, else ``$SEAL_HUB_CACHE/registry``, else ``~/.cache/seal_hub/registry``. These are
ordinary git repositories (``git clone`` one, ``git log --decorate`` it), the same shape as a Hub repository:
branch ``main``, one commit per version, the version's tag on it. `seal_hub.hub.sync` publishes them to the
Hub version by version, without conversion.

Design choices:

- Only git plumbing runs, in the bare repository, never a checkout: files are hashed with ``--no-filters``,
  assembled in a private index file, written as a tree and a commit; then ``main`` and the tag move together in
  one ``git update-ref --stdin`` transaction. An interrupted push leaves unreferenced objects (git's garbage),
  never a half version: until the transaction commits, the previous version is the latest.
- Writers of one repository take an exclusive ``flock`` on ``<repo>.git/seal_hub.lock`` for the whole push
  (the OS drops it when a process dies, so a crash never leaves a stale lock), and ``update-ref`` checks that
  ``main`` is still the commit the new one was built on.
- Pushing identical content under an existing tag returns that version (so a retried push is harmless); other
  content under it is refused. Content equal to ``main``'s tags ``main`` without an empty commit (as the Hub
  skips empty commits).
- Reading exports a commit's files with ``git ls-tree`` and ``git cat-file --batch`` into
  ``<root>/.checkouts/<type>/<namespace>/<name>/<commit>`` (a temporary folder renamed into place); commits never
  change, so an export is reused (and ``.checkouts`` can be deleted at any time).
- git runs with a fixed identity and without the user's global or system configuration, so hooks, signing or
  filters configured elsewhere cannot change what is stored.

Not covered: branches other than ``main`` for pushing (any branch or commit can be read), deleting versions,
and garbage collection (``git gc`` works as usual).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from seal_hub.hub.registry import (
    DEFAULT_BRANCH,
    REPO_TYPES,
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

REGISTRY_ENV = "SEAL_HUB_REGISTRY"
_IDENTITY = {"name": "seal_hub", "email": "seal_hub@localhost"}
_ZERO = "0" * 40


def default_root() -> Path:
    configured = os.environ.get(REGISTRY_ENV)
    if configured:
        return Path(configured).expanduser()
    cache = os.environ.get("SEAL_HUB_CACHE")
    return (Path(cache).expanduser() if cache else Path.home() / ".cache" / "seal_hub") / "registry"


def _git_env(index: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_AUTHOR_NAME=_IDENTITY["name"],
        GIT_AUTHOR_EMAIL=_IDENTITY["email"],
        GIT_COMMITTER_NAME=_IDENTITY["name"],
        GIT_COMMITTER_EMAIL=_IDENTITY["email"],
        LC_ALL="C",
    )
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    return env


class LocalRegistry:
    """Bare git repositories under `root` (see the module docstring)."""

    backend = "local"

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root).expanduser() if root is not None else default_root()

    def __repr__(self) -> str:
        return f"LocalRegistry({str(self.root)!r})"

    # git plumbing

    def path(self, repo_id: str, repo_type: RepoType) -> Path:
        namespace, name = repo_id.split("/")
        return self.root / f"{repo_type}s" / namespace / f"{name}.git"

    def _git(self, repo: Path, *args: str, input: bytes | None = None, index: Path | None = None) -> bytes:
        done = subprocess.run(
            ["git", f"--git-dir={repo}", *args], input=input, capture_output=True, env=_git_env(index), check=False
        )
        if done.returncode != 0:
            message = done.stderr.decode(errors="replace").strip()
            raise HubError(f"git {args[0]} failed in {repo}: {message}")
        return done.stdout

    def _rev(self, repo: Path, revision: str) -> str | None:
        done = subprocess.run(
            [
                "git",
                f"--git-dir={repo}",
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                f"{revision}^{{commit}}",
            ],
            capture_output=True,
            env=_git_env(),
            check=False,
        )
        if done.returncode != 0:
            return None
        return done.stdout.decode().strip() or None

    def _existing(self, repo_id: str, repo_type: RepoType) -> Path:
        repo = self.path(repo_id, repo_type)
        if not (repo / "HEAD").is_file():
            have = ", ".join(f"{r.repo_type}s/{r.repo_id}" for r in self.list_repos(repo_id.split("/")[0])) or "none"
            raise RepoNotFoundError(
                f"local://{repo_type}s/{repo_id}: no such repository in the local registry {self.root} "
                f"(in this namespace: {have})"
            )
        return repo

    @contextmanager
    def _locked(self, repo: Path) -> Iterator[None]:
        with open(repo / "seal_hub.lock", "a+b") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    # Registry protocol

    def create_repo(self, repo_id: str, repo_type: RepoType) -> None:
        Ref(repo_id, repo_type)  # validates
        repo = self.path(repo_id, repo_type)
        if (repo / "HEAD").is_file():
            return
        repo.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=repo.parent, prefix=f".{repo.name}."))
        try:
            self._git(staging, "init", "--quiet", "--bare", f"--initial-branch={DEFAULT_BRANCH}")
            self._git(staging, "config", "core.logAllRefUpdates", "true")
            (staging / "description").write_text(f"seal_hub {repo_type} repository {repo_id}\n")
            try:
                staging.rename(repo)  # atomic; loses to a concurrent creator, which is fine
            except OSError:
                if not (repo / "HEAD").is_file():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def repo_exists(self, repo_id: str, repo_type: RepoType) -> bool:
        return (self.path(repo_id, repo_type) / "HEAD").is_file()

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
        self.create_repo(repo_id, repo_type)
        repo = self.path(repo_id, repo_type)
        files = sorted(p for p in Path(folder).rglob("*") if p.is_file() and ".git" not in p.parts)
        if not files:
            raise HubError(f"nothing to publish as {repo_id}@{tag}: {folder} holds no files")
        with self._locked(repo):
            scratch = repo / "seal_hub-tmp"
            shutil.rmtree(scratch, ignore_errors=True)  # left by a push that died; we hold the lock
            scratch.mkdir()
            try:
                parent = self._rev(repo, f"refs/heads/{DEFAULT_BRANCH}")
                tagged = self._rev(repo, f"refs/tags/{tag}")
                base = tagged if tagged is not None else parent
                tree = self._write_tree(repo, scratch / "index", Path(folder), files, base if keep_existing else None)
                if tagged is not None:
                    if tree != self._tree(repo, tagged):
                        raise VersionExistsError(
                            f"local://{repo_type}s/{repo_id}@{tag} already exists with other content; versions are "
                            "immutable: publish under a new tag"
                        )
                    return Version(tag, tagged, self._title(repo, tagged))
                if parent is not None and tree == self._tree(repo, parent):
                    commit = parent
                else:
                    args = ["commit-tree", tree, *(["-p", parent] if parent else []), "-m", message]
                    commit = self._git(repo, *args).decode().strip()
                tag_object = self._git(repo, "mktag", input=self._tag_text(commit, tag, message)).decode().strip()
                from seal_hub._kill_points import kill_point  # test-only: objects written, refs not moved

                kill_point("publish")
                self._update_refs(repo, commit, parent, tag, tag_object)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
        return Version(tag, commit, message.splitlines()[0] if message else "")

    def _write_tree(self, repo: Path, index: Path, folder: Path, files: list[Path], base: str | None) -> str:
        if base is not None:
            self._git(repo, "read-tree", base, index=index)
        else:
            self._git(repo, "read-tree", "--empty", index=index)
        paths = "".join(f"{f}\n" for f in files).encode()
        shas = self._git(repo, "hash-object", "-w", "--no-filters", "--stdin-paths", input=paths).decode().split()
        entries = "".join(
            f"{'100755' if os.access(f, os.X_OK) else '100644'} {sha}\t{f.relative_to(folder).as_posix()}\n"
            for f, sha in zip(files, shas, strict=True)
        )
        self._git(repo, "update-index", "--add", "--index-info", input=entries.encode(), index=index)
        return self._git(repo, "write-tree", index=index).decode().strip()

    def _tag_text(self, commit: str, tag: str, message: str) -> bytes:
        tagger = f"{_IDENTITY['name']} <{_IDENTITY['email']}> {int(time.time())} +0000"
        return f"object {commit}\ntype commit\ntag {tag}\ntagger {tagger}\n\n{message}\n".encode()

    def _update_refs(self, repo: Path, commit: str, parent: str | None, tag: str, tag_object: str) -> None:
        """Move ``main`` (if it changes) and create the tag in one transaction: both happen, or neither."""
        lines = ["start"]
        if commit != parent:
            lines.append(f"update refs/heads/{DEFAULT_BRANCH} {commit} {parent or _ZERO}")
        lines += [f"create refs/tags/{tag} {tag_object}", "prepare", "commit", ""]
        self._git(repo, "update-ref", "--stdin", input="\n".join(lines).encode())

    def _tree(self, repo: Path, commit: str) -> str:
        return self._git(repo, "rev-parse", f"{commit}^{{tree}}").decode().strip()

    def _title(self, repo: Path, commit: str) -> str:
        return self._git(repo, "log", "-1", "--format=%s", commit).decode().strip()

    def versions(self, repo_id: str, repo_type: RepoType) -> list[Version]:
        repo = self._existing(repo_id, repo_type)
        refs = self._git(
            repo,
            "for-each-ref",
            "--sort=taggerdate",
            "--format=%(refname:strip=2)%00%(*objectname)%00%(objectname)%00%(contents:subject)",
            "refs/tags",
        ).decode()
        tags = []
        for line in refs.splitlines():
            name, peeled, direct, subject = line.split("\0")
            tags.append(Version(name, peeled or direct, subject))
        if self._rev(repo, f"refs/heads/{DEFAULT_BRANCH}") is None:
            return tags
        order = self._git(repo, "rev-list", "--reverse", "--topo-order", f"refs/heads/{DEFAULT_BRANCH}").decode()
        position = {commit: i for i, commit in enumerate(order.split())}
        return sorted(tags, key=lambda v: position.get(v.commit, len(position)))

    def resolve(self, ref: Ref) -> str:
        repo_type = ref.repo_type or "model"
        repo = self._existing(ref.repo_id, repo_type)
        revision = ref.revision or DEFAULT_BRANCH
        commit = self._rev(repo, revision)
        if commit is None:
            known = ", ".join(v.tag for v in self.versions(ref.repo_id, repo_type)) or "none yet"
            raise RevisionNotFoundError(
                f"{ref}: no tag, branch or commit {revision!r} in local://{repo_type}s/{ref.repo_id} "
                f"(versions: {known})"
            )
        return commit

    def download(self, ref: Ref) -> Path:
        commit = self.resolve(ref)
        repo = self.path(ref.repo_id, ref.repo_type or "model")
        target = self.root / ".checkouts" / f"{ref.repo_type or 'model'}s" / ref.repo_id / commit
        if target.is_dir():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{commit}."))
        try:
            self._export(repo, commit, staging)
            try:
                staging.rename(target)
            except OSError:
                if not target.is_dir():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return target

    def _export(self, repo: Path, commit: str, out: Path) -> None:
        listing = self._git(repo, "ls-tree", "-r", "-z", "--full-tree", commit).decode().split("\0")
        entries = []
        for item in filter(None, listing):
            meta, path = item.split("\t", 1)
            mode, kind, sha = meta.split()
            if kind == "blob":
                entries.append((mode, sha, path))
        batch = self._git(repo, "cat-file", "--batch", input="".join(f"{sha}\n" for _, sha, _ in entries).encode())
        offset = 0
        for mode, _sha, path in entries:
            header_end = batch.index(b"\n", offset)
            size = int(batch[offset:header_end].split()[2])
            content = batch[header_end + 1 : header_end + 1 + size]
            offset = header_end + 1 + size + 1
            target = out / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            if mode == "100755":
                target.chmod(0o755)

    def list_repos(self, namespace: str | None = None) -> list[RepoListing]:
        if namespace is not None:
            check_namespace(namespace)
        found = []
        for repo_type in REPO_TYPES:
            base = self.root / f"{repo_type}s"
            pattern = f"{namespace}/*.git" if namespace else "*/*.git"
            for repo in sorted(base.glob(pattern)) if base.is_dir() else []:
                if (repo / "HEAD").is_file():
                    repo_id = f"{repo.parent.name}/{repo.name.removesuffix('.git')}"
                    found.append(RepoListing(repo_type, repo_id, tuple(self.versions(repo_id, repo_type))))
        return found
