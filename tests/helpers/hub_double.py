"""A loopback Hugging Face Hub for tests: the HTTP endpoints `huggingface_hub` 2.4 and `datasets` 5.2 call.

`HubDouble()` serves on 127.0.0.1 (a free port) from a thread; point clients at `double.endpoint`. It keeps
repositories in memory: commits (each a full map path -> file), branches, tags, and an LFS object store.
Implemented, with the response shapes the real client parses:

- ``POST /api/repos/create`` (409 with ``url`` when the repo exists), ``POST /api/validate-yaml`` (real YAML check);
- ``GET /api/{type}s/{repo}[/revision/{rev}]`` (repo info with ``sha`` and ``siblings``),
  ``GET /api/{type}s?author=`` (listing);
- ``GET /api/{type}s/{repo}/tree/{rev}[/{path}]`` (``recursive``; 404 ``EntryNotFound`` for a missing folder);
- ``POST /api/{type}s/{repo}/preupload/{rev}`` (binary and ``.parquet`` / ``.safetensors`` / ``.bin`` files go LFS),
  ``POST /{prefix}{repo}.git/info/lfs/objects/batch`` and the ``PUT`` it points to (basic transfer, sha256
  checked), ``POST /api/{type}s/{repo}/commit/{rev}`` (NDJSON: file, lfsFile, deletedFile, deletedFolder;
  ``parentCommit`` checked; ``preupload`` returns each file's current ``oid``, so the client skips unchanged files);
- ``POST /api/{type}s/{repo}/tag/{rev}`` (409 when the tag exists), ``GET .../refs``, ``GET .../commits/{rev}``;
- ``HEAD`` / ``GET /{prefix}{repo}/resolve/{rev}/{path}`` with ``X-Repo-Commit``, ``ETag``, ``X-Linked-Etag``.

Space repositories (``spaces/NS/NAME``, created with ``type: space``) are kept like the other two; nothing builds
or runs them. Writes need ``Authorization: Bearer <token>`` when the double is given a token. `requests` records every
request line and whether it carried auth; `fail_commits` makes the commit endpoint answer 500 (a push
interrupted after its LFS uploads), `fail_tags` the tag endpoint (interrupted between commit and tag).
Not a Hub: no Xet, no pull requests, no pagination, no access control beyond the token; an endpoint it lacks
answers 501 (the client's optional ``/api/agent-harnesses`` lookup gets that and carries on).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import socket
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

LFS_SUFFIXES = (".parquet", ".safetensors", ".bin", ".arrow", ".pt")
GITATTRIBUTES = b"*.parquet filter=lfs diff=lfs merge=lfs -text\n*.safetensors filter=lfs diff=lfs merge=lfs -text\n"


def git_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass(frozen=True)
class Blob:
    data: bytes | None = None  # regular file
    lfs_sha: str | None = None  # LFS file (content in the double's LFS store)
    size: int = 0

    def pointer(self) -> bytes:
        return f"version https://git-lfs.github.com/spec/v1\noid sha256:{self.lfs_sha}\nsize {self.size}\n".encode()

    @property
    def oid(self) -> str:
        return git_sha(self.pointer() if self.lfs_sha else self.data or b"")


@dataclass
class Commit:
    oid: str
    parent: str | None
    files: dict[str, Blob]
    title: str
    message: str
    date: str


@dataclass
class Repo:
    repo_type: str
    repo_id: str
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)


class Reply(Exception):
    def __init__(self, status: int, body: object = None, headers: dict[str, str] | None = None) -> None:
        self.status, self.body, self.headers = status, body, headers or {}


def _not_found(code: str, message: str) -> Reply:
    return Reply(404, {"error": message}, {"X-Error-Code": code, "X-Error-Message": message})


class HubDouble:
    def __init__(self, token: str | None = None) -> None:
        self.token = token
        self.repos: dict[tuple[str, str], Repo] = {}
        self.lfs: dict[str, bytes] = {}
        self.requests: list[tuple[str, str, bool]] = []
        self.fail_commits = False
        self.fail_tags = False
        self._lock = threading.RLock()
        self._counter = itertools.count()
        double = self

        class Handler(_Handler):
            hub = double

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> HubDouble:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # storage

    def repo(self, repo_type: str, repo_id: str) -> Repo:
        repo = self.repos.get((repo_type, repo_id))
        if repo is None:
            raise _not_found("RepoNotFound", f"Repository not found: {repo_type}s/{repo_id}")
        return repo

    def resolve(self, repo: Repo, revision: str) -> Commit:
        oid = repo.branches.get(revision) or repo.tags.get(revision)
        if oid is None and len(revision) >= 7:
            matches = [c for c in repo.commits if c.startswith(revision)]
            oid = matches[0] if len(matches) == 1 else None
        if oid is None:
            raise _not_found("RevisionNotFound", f"Invalid rev id: {revision}")
        return repo.commits[oid]

    def commit(self, repo: Repo, branch: str, files: dict[str, Blob], title: str, message: str) -> Commit:
        parent = repo.branches.get(branch)
        seed = json.dumps([parent, sorted((p, b.oid) for p, b in files.items()), title, next(self._counter)])
        oid = hashlib.sha1(seed.encode()).hexdigest()
        date = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        repo.commits[oid] = Commit(oid, parent, files, title, message, date)
        repo.branches[branch] = oid
        return repo.commits[oid]

    def files_at(self, repo_type: str, repo_id: str, revision: str) -> dict[str, bytes]:
        """Test helper: the content of every file at `revision`."""
        commit = self.resolve(self.repo(repo_type, repo_id), revision)
        return {p: b.data if b.lfs_sha is None else self.lfs[b.lfs_sha] for p, b in commit.files.items()}


class _Handler(BaseHTTPRequestHandler):
    hub: HubDouble
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no Nagle stalls on keep-alive

    def do_GET(self) -> None:
        self._dispatch()

    do_HEAD = do_POST = do_PUT = do_GET

    def _dispatch(self) -> None:
        method, url = self.command, urlsplit(self.path)
        self.query = parse_qs(url.query)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))  # the client always sends a length
        authorised = self.headers.get("Authorization") == f"Bearer {self.hub.token}"
        self.hub.requests.append((method, self.path, "Authorization" in self.headers))
        try:
            # YAML validation needs no token; an LFS PUT goes to a pre-signed URL, which carries none
            public = url.path == "/api/validate-yaml" or url.path.startswith("/__lfs__/")
            if method in ("POST", "PUT") and self.hub.token and not authorised and not public:
                raise Reply(
                    401, {"error": "Invalid credentials"}, {"X-Error-Message": "Invalid username or password."}
                )
            with self.hub._lock:
                status, payload, headers = 200, self._route(method, url.path, body), {}
        except Reply as reply:
            status, payload, headers = reply.status, reply.body, reply.headers
        if isinstance(payload, tuple):  # (bytes, headers) for file downloads
            payload, extra = payload
            headers = {**headers, **extra}
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode() if payload is not None else b""
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        if not isinstance(payload, bytes):
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(data)

    # routing: split before unquoting, since revisions and paths arrive quoted with %2F

    def _route(self, method: str, path: str, body: bytes) -> object:
        parts = path.strip("/").split("/")
        if path == "/api/repos/create" and method == "POST":
            return self._create(json.loads(body))
        if path == "/api/validate-yaml" and method == "POST":
            return self._validate_yaml(json.loads(body))
        if method == "PUT" and parts[0] == "__lfs__":
            return self._lfs_put(parts[1], body)
        if parts[0] == "api" and len(parts) == 2 and parts[1] in ("models", "datasets", "spaces"):
            return self._list(parts[1][:-1])
        if parts[0] == "api" and len(parts) >= 4 and parts[1] in ("models", "datasets", "spaces"):
            repo = self.hub.repo(parts[1][:-1], f"{parts[2]}/{parts[3]}")
            return self._api(method, repo, parts[4:], body)
        repo_type = {"datasets": "dataset", "spaces": "space"}.get(parts[0], "model")
        rest = parts[1:] if parts[0] in ("datasets", "spaces") else parts
        if len(rest) >= 2 and rest[1].endswith(".git") and rest[2:] == ["info", "lfs", "objects", "batch"]:
            return self._lfs_batch(json.loads(body))
        if len(rest) >= 5 and rest[2] == "resolve":
            repo = self.hub.repo(repo_type, f"{rest[0]}/{rest[1]}")
            return self._resolve(method, repo, unquote(rest[3]), unquote("/".join(rest[4:])))
        raise Reply(501, {"error": f"the Hub double does not implement {method} {path}"})

    def _api(self, method: str, repo: Repo, rest: list[str], body: bytes) -> object:
        action = rest[0] if rest else ""
        if method == "GET" and action in ("", "revision"):
            return self._info(repo, unquote(rest[1]) if action == "revision" else "main")
        if method == "GET" and action == "tree":
            return self._tree(repo, unquote(rest[1]), unquote("/".join(rest[2:])))
        if method == "POST" and action == "preupload":
            return self._preupload(repo, unquote(rest[1]), json.loads(body))
        if method == "POST" and action == "commit":
            return self._commit(repo, unquote(rest[1]), body)
        if method == "POST" and action == "tag":
            return self._tag(repo, unquote(rest[1]), json.loads(body))
        if method == "GET" and action == "refs":
            return self._refs(repo)
        if method == "GET" and action == "commits":
            return self._commits(repo, unquote(rest[1]) if len(rest) > 1 else "main")
        raise Reply(501, {"error": f"the Hub double does not implement {method} {action} on a repository"})

    def _url(self, repo: Repo) -> str:
        prefix = {"dataset": "datasets/", "space": "spaces/"}.get(repo.repo_type, "")
        return f"{self.hub.endpoint}/{prefix}{repo.repo_id}"

    def _create(self, payload: dict) -> object:
        repo_type = payload.get("type") or "model"
        repo_id = f"{payload['organization']}/{payload['name']}"
        if (repo_type, repo_id) in self.hub.repos:
            raise Reply(
                409, {"error": "You already created this repo", "url": self._url(self.hub.repo(repo_type, repo_id))}
            )
        repo = self.hub.repos[(repo_type, repo_id)] = Repo(repo_type, repo_id)
        gitattributes = Blob(data=GITATTRIBUTES, size=len(GITATTRIBUTES))
        self.hub.commit(repo, "main", {".gitattributes": gitattributes}, "initial commit", "")
        return {"url": self._url(repo), "name": repo_id, "id": repo_id}

    def _validate_yaml(self, payload: dict) -> object:
        content = payload.get("content", "")
        try:
            metadata = yaml.safe_load(content.split("---", 2)[1]) if content.startswith("---") else {}
        except yaml.YAMLError as exc:
            raise Reply(400, {"errors": [{"message": f"invalid YAML: {exc}"}]}) from None
        if not isinstance(metadata, dict):
            raise Reply(400, {"errors": [{"message": "metadata must be a YAML mapping"}]})
        return {"errors": [], "warnings": []}

    def _list(self, repo_type: str) -> object:
        author = self.query.get("author", [None])[0]
        return [
            {"id": r.repo_id, "sha": r.branches.get("main"), "private": False}
            for (kind, repo_id), r in sorted(self.hub.repos.items())
            if kind == repo_type and (author is None or repo_id.split("/")[0] == author)
        ]

    def _info(self, repo: Repo, revision: str) -> object:
        commit = self.hub.resolve(repo, revision)
        info = {"id": repo.repo_id, "sha": commit.oid, "private": False, "lastModified": commit.date, "tags": []}
        return info | {"siblings": [{"rfilename": p} for p in sorted(commit.files)]}

    def _entry(self, path: str, blob: Blob) -> dict:
        entry = {"type": "file", "oid": blob.oid, "size": blob.size, "path": path}
        if blob.lfs_sha:
            entry["lfs"] = {"oid": blob.lfs_sha, "size": blob.size, "pointerSize": len(blob.pointer())}
        return entry

    def _entries(self, commit: Commit, folder: str, recursive: bool) -> list[dict]:
        prefix = f"{folder.strip('/')}/" if folder.strip("/") else ""
        entries, folders = [], set()
        for path in sorted(commit.files):
            if not path.startswith(prefix):
                continue
            rest = path[len(prefix) :]
            parts = rest.split("/")
            for depth in range(1, len(parts) if recursive else min(2, len(parts))):
                folders.add(prefix + "/".join(parts[:depth]))
            if recursive or len(parts) == 1:
                entries.append(self._entry(path, commit.files[path]))
        tree_oid = hashlib.sha1(commit.oid.encode()).hexdigest()
        return [{"type": "directory", "oid": tree_oid, "size": 0, "path": f} for f in sorted(folders)] + entries

    def _tree(self, repo: Repo, revision: str, folder: str) -> object:
        commit = self.hub.resolve(repo, revision)
        recursive = self.query.get("recursive", ["false"])[0].lower() in ("1", "true")
        entries = self._entries(commit, folder, recursive)
        if folder and not entries:
            raise _not_found("EntryNotFound", f"{folder} does not exist on {revision}")
        return entries

    def _preupload(self, repo: Repo, revision: str, payload: dict) -> object:
        current = self.hub.resolve(repo, revision).files if revision in repo.branches else {}
        files = []
        for item in payload["files"]:
            sample = base64.b64decode(item["sample"])
            lfs = item["path"].endswith(LFS_SUFFIXES) or b"\0" in sample
            existing = current.get(item["path"])
            oid = None if existing is None else existing.lfs_sha if existing.lfs_sha else git_sha(existing.data or b"")
            mode = "lfs" if lfs else "regular"
            files.append({"path": item["path"], "uploadMode": mode, "shouldIgnore": False, "oid": oid})
        return {"files": files, "commitOid": repo.branches.get(revision)}

    def _lfs_batch(self, payload: dict) -> object:
        objects = []
        for item in payload["objects"]:
            entry = {"oid": item["oid"], "size": item["size"]}
            if item["oid"] not in self.hub.lfs:
                entry["actions"] = {"upload": {"href": f"{self.hub.endpoint}/__lfs__/{item['oid']}", "header": {}}}
            objects.append(entry)
        return {"transfer": "basic", "objects": objects}

    def _lfs_put(self, oid: str, body: bytes) -> object:
        if hashlib.sha256(body).hexdigest() != oid:
            raise Reply(400, {"error": f"content does not match sha256 {oid}"})
        self.hub.lfs[oid] = body
        return None

    def _commit(self, repo: Repo, revision: str, body: bytes) -> object:
        if self.hub.fail_commits:
            raise Reply(500, {"error": "Internal Error - the double was told to fail commits"})
        if revision not in repo.branches:
            raise _not_found("RevisionNotFound", f"Invalid rev id: {revision}")
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        header = next(item["value"] for item in lines if item["key"] == "header")
        head = repo.branches[revision]
        if header.get("parentCommit") and header["parentCommit"] != head:
            raise Reply(412, {"error": f"A commit has happened since. Please refresh and try again. ({head})"})
        files = dict(repo.commits[head].files)
        for item in lines:
            key, value = item["key"], item["value"]
            if key == "file":
                data = base64.b64decode(value["content"])
                files[value["path"]] = Blob(data=data, size=len(data))
            elif key == "lfsFile":
                if value["oid"] not in self.hub.lfs:
                    raise Reply(422, {"error": f"LFS object {value['oid']} was never uploaded"})
                files[value["path"]] = Blob(lfs_sha=value["oid"], size=len(self.hub.lfs[value["oid"]]))
            elif key == "deletedFile":
                files.pop(value["path"], None)
            elif key == "deletedFolder":
                files = {p: b for p, b in files.items() if not p.startswith(value["path"].rstrip("/") + "/")}
        commit = self.hub.commit(repo, revision, files, header["summary"], header.get("description", ""))
        return {"commitUrl": f"{self._url(repo)}/commit/{commit.oid}", "commitOid": commit.oid, "success": True}

    def _tag(self, repo: Repo, revision: str, payload: dict) -> object:
        if self.hub.fail_tags:
            raise Reply(500, {"error": "Internal Error - the double was told to fail tags"})
        commit = self.hub.resolve(repo, revision)
        if payload["tag"] in repo.tags:
            raise Reply(409, {"error": f"Tag {payload['tag']} already exists"})
        repo.tags[payload["tag"]] = commit.oid
        return {}

    def _refs(self, repo: Repo) -> object:
        def ref(kind: str, name: str, oid: str) -> dict:
            return {"name": name, "ref": f"refs/{kind}/{name}", "targetCommit": oid}

        return {
            "branches": [ref("heads", n, o) for n, o in repo.branches.items()],
            "tags": [ref("tags", n, o) for n, o in repo.tags.items()],
            "converts": [],
        }

    def _commits(self, repo: Repo, revision: str) -> object:
        commit, history = self.hub.resolve(repo, revision), []
        while commit is not None:
            author = [{"user": "seal-double"}]
            history.append({"id": commit.oid, "authors": author, "date": commit.date, "title": commit.title})
            history[-1]["message"] = commit.message
            commit = repo.commits.get(commit.parent) if commit.parent else None
        return history

    def _resolve(self, method: str, repo: Repo, revision: str, path: str) -> object:
        commit = self.hub.resolve(repo, revision)
        blob = commit.files.get(path)
        if blob is None:
            raise _not_found("EntryNotFound", f"{path} does not exist on {revision}")
        data = self.hub.lfs[blob.lfs_sha] if blob.lfs_sha else blob.data or b""
        headers = {"X-Repo-Commit": commit.oid, "ETag": f'"{blob.oid}"'}
        if blob.lfs_sha:
            headers.update({"X-Linked-Etag": f'"{blob.lfs_sha}"', "X-Linked-Size": str(blob.size)})
        return data, headers


# the token the double checks: a canary that a test looks for in every card, dataset, log and error
TOKEN = "hf_SealCanary7f3c9a1e5b2d4f6a8c0e"


def talk_to(patch, double: HubDouble, root: Path) -> None:
    """Point the clients at `double` for one test (`patch`: its pytest MonkeyPatch): the client's import-time
    switches, and the environment read at call time."""
    from huggingface_hub import constants

    patch.setattr(constants, "HF_HUB_OFFLINE", False)
    patch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    for name, value in {
        "HF_HUB_OFFLINE": "0",
        "HF_DATASETS_OFFLINE": "0",
        "TRANSFORMERS_OFFLINE": "0",
        "HF_HUB_DISABLE_XET": "1",
        "HF_ENDPOINT": double.endpoint,
        "HF_TOKEN": TOKEN,
        "HF_HUB_CACHE": str(root / "hf-cache"),
        "HF_DATASETS_CACHE": str(root / "datasets-cache"),
        "SEAL_HUB_REGISTRY": str(root / "registry"),
    }.items():
        patch.setenv(name, value)
    patch.delenv("SEAL_HUB_BACKEND", raising=False)
