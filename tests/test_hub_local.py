"""The local registry: references, real git repositories, versions, the three artifacts and their cards, loading,
the CLI, and reliability (interrupted pushes, concurrent writers, clear errors for wrong revisions)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from helpers.hub_artifacts import adapter, diagnoses, lora_weights, snapshots, trajectories

import seal_hub
from seal_hub.cli import main
from seal_hub.hub import (
    EvalScore,
    HubError,
    HubRegistry,
    LocalRegistry,
    PublishConfig,
    Ref,
    RepoNotFoundError,
    RevisionNotFoundError,
    RunRepos,
    VersionExistsError,
    configured_backend,
    fetch,
    publish_interface,
    publish_iteration,
)
from seal_hub.hub.cards import card_metadata
from seal_hub.interface import diff
from seal_hub.rollout.records import from_rows

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def registry(tmp_path, monkeypatch) -> LocalRegistry:
    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(tmp_path / "registry"))
    monkeypatch.setenv("SEAL_HUB_BACKEND", "local")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "datasets-cache"))
    return LocalRegistry()


def _folder(root: Path, **files: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = root / name.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={repo}", *args], capture_output=True, text=True, check=True).stdout


def _files(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Three iterations of a run published to a fresh local registry: base model, adapters, snapshots, data."""
    from seal_hub.models import build_tiny_model

    root = tmp_path_factory.mktemp("run")
    base = build_tiny_model(root / "tiny")
    adapters = [adapter(base, root / f"adapter-{k}", seed=k) for k in range(3)]
    data = [trajectories(k, interface_version=f"v{k}") for k in range(3)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SEAL_HUB_REGISTRY", str(root / "registry"))
        registry = LocalRegistry()
        repos = RunRepos.of("alice/run1")
        for k, snapshot in enumerate(snapshots()):
            publish_iteration(
                repos,
                k,
                trajectories=data[k],
                diagnoses=diagnoses(data[k]),
                snapshot=snapshot,
                adapter_dir=adapters[k],
                results=[EvalScore("accuracy", 0.25 * k, name="BFCL multi-turn accuracy")] if k else [],
                registry=registry,
            )
    return {"root": root, "registry": registry, "repos": repos, "adapters": adapters, "data": data, "base": base}


@pytest.fixture
def published(run, monkeypatch):
    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(run["registry"].root))
    monkeypatch.setenv("SEAL_HUB_BACKEND", "local")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(run["root"] / "datasets-cache"))
    return run


# references and the default backend


def test_references_parse_backend_type_and_revision():
    ref = Ref.parse("local://datasets/alice/run1-env@v3")
    assert (ref.backend, ref.repo_type, ref.repo_id, ref.revision) == ("local", "dataset", "alice/run1-env", "v3")
    assert str(ref) == "local://datasets/alice/run1-env@v3"
    hub = Ref.parse("hf://alice/run1-adapter@iter-2", "model")
    assert (hub.backend, hub.repo_type, hub.revision) == ("hub", "model", "iter-2")
    plain = Ref.parse("alice/run1-env")
    assert (plain.backend, plain.repo_type, plain.revision) == (None, None, None)
    assert Ref.parse("alice/x@refs/pr/1").revision == "refs/pr/1"
    for bad in ("alice", "alice/run@", "s3://alice/run", "alice/run@v1..v2", "a/b/c", "alice/run@-x"):
        with pytest.raises(HubError, match="alice|a/b/c|scheme"):
            Ref.parse(bad)


def test_default_backend_is_local_unless_a_token_or_endpoint_is_configured(tmp_path, monkeypatch):
    from huggingface_hub import constants

    for name in ("SEAL_HUB_BACKEND", "HF_ENDPOINT", "HF_TOKEN", "HF_OIDC_RESOURCE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "token"))  # no saved login there
    assert configured_backend() == "local"
    (tmp_path / "token").write_text("hf_saved_login")
    assert configured_backend() == "hub"
    (tmp_path / "token").unlink()
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    assert configured_backend() == "hub"
    monkeypatch.setenv("SEAL_HUB_BACKEND", "local")
    assert configured_backend() == "local"
    monkeypatch.setenv("SEAL_HUB_BACKEND", "cloud")
    with pytest.raises(HubError, match="SEAL_HUB_BACKEND"):
        configured_backend()


def test_publish_config_checks_its_fields_and_picks_the_registry(tmp_path, monkeypatch):
    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(tmp_path))
    config = PublishConfig(run="alice/run1", backend="local")
    assert config.repos == RunRepos("alice/run1-trajectories", "alice/run1-env", "alice/run1-adapter")
    assert isinstance(config.registry(), LocalRegistry) and config.registry().root == tmp_path
    assert isinstance(PublishConfig(run="alice/run1", backend="hub", private=True).registry(), HubRegistry)
    for kwargs, message in (
        ({"run": ""}, "run is empty"),
        ({"run": "run1"}, "run='run1'"),
        ({"run": "alice/run1", "backend": "s3"}, "backend='s3'"),
        ({"run": "alice/run1", "backend": "local", "private": True}, "private=True"),
    ):
        with pytest.raises(ValueError, match=message):
            PublishConfig(**kwargs)


# the registry: real git, versions, immutability


def test_local_repositories_are_real_git_with_a_commit_and_tag_per_version(registry, tmp_path):
    for k in range(3):
        folder = _folder(tmp_path / f"v{k}", **{"README.md": f"version {k}\n", "data__part.txt": f"rows of {k}\n"})
        registry.push("alice/demo", "dataset", folder, tag=f"v{k}", message=f"version {k}")
    repo = registry.path("alice/demo", "dataset")
    assert repo.name == "demo.git" and _git(repo, "rev-parse", "--is-bare-repository").strip() == "true"
    assert _git(repo, "tag", "--list").split() == ["v0", "v1", "v2"]
    assert len(_git(repo, "rev-list", "main").split()) == 3
    subprocess.run(["git", f"--git-dir={repo}", "fsck", "--strict", "--no-dangling"], check=True, capture_output=True)
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "--quiet", "--branch", "v1", str(repo), str(clone)], check=True, capture_output=True
    )
    assert (clone / "data" / "part.txt").read_text() == "rows of 1\n"
    assert [v.tag for v in registry.versions("alice/demo", "dataset")] == ["v0", "v1", "v2"]


def test_old_tags_branches_and_commits_load_their_own_content(registry, tmp_path):
    commits = []
    for k in range(3):
        folder = _folder(tmp_path / f"v{k}", **{"README.md": f"version {k}\n", f"only_{k}.txt": "x"})
        commits.append(registry.push("alice/demo", "model", folder, tag=f"v{k}", message=f"version {k}").commit)
    assert _files(registry.download(Ref("alice/demo", "model", "v0"))) == {
        "README.md": "version 0\n",
        "only_0.txt": "x",
    }
    assert _files(registry.download(Ref("alice/demo", "model", commits[1]))) == {
        "README.md": "version 1\n",
        "only_1.txt": "x",
    }
    assert _files(registry.download(Ref("alice/demo", "model", commits[1][:10])))["README.md"] == "version 1\n"
    assert _files(registry.download(Ref("alice/demo", "model", "main")))["README.md"] == "version 2\n"
    assert registry.resolve(Ref("alice/demo", "model")) == commits[2]


def test_a_version_is_immutable_and_repeating_a_push_is_harmless(registry, tmp_path):
    folder = _folder(tmp_path / "a", **{"README.md": "a\n"})
    first = registry.push("alice/demo", "model", folder, tag="v1", message="first")
    again = registry.push("alice/demo", "model", folder, tag="v1", message="first, retried")
    assert again.commit == first.commit and len(registry.versions("alice/demo", "model")) == 1
    with pytest.raises(VersionExistsError, match="alice/demo@v1 already exists"):
        registry.push("alice/demo", "model", _folder(tmp_path / "b", **{"README.md": "b\n"}), tag="v1", message="x")
    same = registry.push("alice/demo", "model", folder, tag="v1-again", message="same content")
    assert same.commit == first.commit  # no empty commit, a second tag on the same commit
    assert [v.tag for v in registry.versions("alice/demo", "model")] == ["v1", "v1-again"]


def test_missing_repository_or_revision_is_an_error_naming_the_ref(registry, tmp_path):
    registry.push("alice/demo", "dataset", _folder(tmp_path / "a", **{"interface.json": "{}"}), tag="v1", message="m")
    with pytest.raises(RevisionNotFoundError, match=r"alice/demo@v9.*'v9'.*versions: v1"):
        registry.resolve(Ref.parse("local://alice/demo@v9", "dataset"))
    with pytest.raises(RepoNotFoundError, match="alice/nothing"):
        seal_hub.load_interface("local://alice/nothing@v1")
    with pytest.raises(RevisionNotFoundError, match="alice/demo@deadbeef"):
        fetch("alice/demo@deadbeef", "dataset")


# reliability


def test_an_interrupted_push_leaves_no_half_version(registry, tmp_path, monkeypatch):
    registry.push("alice/demo", "model", _folder(tmp_path / "a", **{"w.txt": "old"}), tag="v1", message="v1")
    head = registry.resolve(Ref("alice/demo", "model"))

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # after every object is written, before the refs move

    monkeypatch.setattr(LocalRegistry, "_update_refs", interrupted)
    with pytest.raises(KeyboardInterrupt):
        registry.push("alice/demo", "model", _folder(tmp_path / "b", **{"w.txt": "new"}), tag="v2", message="v2")
    monkeypatch.undo()
    repo = registry.path("alice/demo", "model")
    assert [v.tag for v in registry.versions("alice/demo", "model")] == ["v1"]
    assert registry.resolve(Ref("alice/demo", "model")) == head
    assert not (repo / "seal_hub-tmp").exists()
    subprocess.run(["git", f"--git-dir={repo}", "fsck", "--strict"], check=True, capture_output=True)
    registry.push("alice/demo", "model", _folder(tmp_path / "b", **{"w.txt": "new"}), tag="v2", message="v2")
    assert _files(registry.download(Ref("alice/demo", "model", "v2"))) == {"w.txt": "new"}


def test_a_push_killed_midway_leaves_the_previous_version_latest_and_no_stale_lock(registry, tmp_path):
    registry.push("alice/demo", "model", _folder(tmp_path / "a", **{"w.txt": "old"}), tag="v1", message="v1")
    folder = _folder(tmp_path / "b", **{"w.txt": "new", "big.bin": "x" * 100_000})
    script = textwrap.dedent(
        f"""
        import os, signal
        from pathlib import Path
        from seal_hub.hub.local import LocalRegistry
        LocalRegistry._update_refs = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
        registry = LocalRegistry({str(registry.root)!r})
        registry.push("alice/demo", "model", Path({str(folder)!r}), tag="v2", message="v2")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, cwd=REPO_ROOT, timeout=60)
    assert done.returncode == -signal.SIGKILL
    assert [v.tag for v in registry.versions("alice/demo", "model")] == ["v1"]
    assert _files(registry.download(Ref("alice/demo", "model", "main"))) == {"w.txt": "old"}
    version = registry.push("alice/demo", "model", folder, tag="v2", message="v2")  # the dead writer's lock is gone
    assert registry.resolve(Ref("alice/demo", "model")) == version.commit


def test_two_processes_pushing_to_one_repository_never_corrupt_it(registry, tmp_path):
    script = textwrap.dedent(
        """
        import sys, tempfile
        from pathlib import Path
        from seal_hub.hub.local import LocalRegistry
        root, writer = sys.argv[1], sys.argv[2]
        registry = LocalRegistry(root)
        for k in range(6):
            folder = Path(tempfile.mkdtemp())
            (folder / f"{writer}-{k}.txt").write_text(f"{writer} {k}")
            registry.push("alice/shared", "dataset", folder, tag=f"{writer}-{k}", message=f"{writer} {k}",
                          keep_existing=True)
        """
    )
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(registry.root), name], cwd=REPO_ROOT, stderr=subprocess.PIPE
        )
        for name in ("a", "b")
    ]
    for writer in writers:
        assert writer.wait(timeout=60) == 0, writer.stderr.read().decode()
    repo = registry.path("alice/shared", "dataset")
    subprocess.run(["git", f"--git-dir={repo}", "fsck", "--strict"], check=True, capture_output=True)
    versions = registry.versions("alice/shared", "dataset")
    assert sorted(v.tag for v in versions) == sorted(f"{w}-{k}" for w in "ab" for k in range(6))
    assert len(_git(repo, "rev-list", "main").split()) == 12  # linear: one commit per version, none lost
    seen: set[str] = set()
    for version in versions:  # each version holds every file published before it, plus its own
        files = set(_files(registry.download(Ref("alice/shared", "dataset", version.tag))))
        assert seen < files and files - seen == {f"{version.tag}.txt"}
        seen = files
    assert _files(registry.download(Ref("alice/shared", "dataset")))["b-5.txt"] == "b 5"


# the three artifacts, their cards, loading


def test_interfaces_load_by_version_and_the_card_is_the_changelog(published):
    v0, v1, _ = snapshots()
    loaded = seal_hub.load_interface("alice/run1-env@v1")
    assert loaded.content_hash == v1.content_hash and loaded.parent == "v0"
    assert seal_hub.load_interface("local://alice/run1-env@v0").is_null
    card = (fetch("alice/run1-env@v1") / "README.md").read_text()
    for line in diff(v0, v1):
        assert line in card
    assert "| missing_tool_call | 25 | 0.250 | 0.300 |" in card and "guideline[missing_tool_call]" in card
    assert "lineage: v0 → v1" in card
    metadata = card_metadata(card)
    assert metadata["seal"]["version"] == "v1" and metadata["seal"]["parent"] == "v0"
    assert metadata["seal"]["trajectories"] == "alice/run1-trajectories@iter-1"
    assert metadata["seal"]["adapter"] == "alice/run1-adapter@iter-1"
    assert "https://huggingface.co/alice/run1-adapter/tree/iter-1" in card


def test_publishing_an_interface_needs_its_parent_and_is_idempotent(registry):
    v0, v1, v2 = snapshots()
    with pytest.raises(HubError, match="parent 'v1' of 'v2' is not published"):
        publish_interface("alice/env", v2, registry=registry)
    first = publish_interface("alice/env", v0, registry=registry)
    assert publish_interface("alice/env", v0, registry=registry) == first
    publish_interface("alice/env", v1, registry=registry)
    clash = v2.model_validate(v2.model_dump() | {"version": "v1", "parent": "v0", "content_hash": ""})
    with pytest.raises(VersionExistsError, match="alice/env@v1 already holds interface"):
        publish_interface("alice/env", clash, registry=registry)


def test_trajectories_and_diagnoses_load_with_datasets_at_each_iteration(published):
    from datasets import load_dataset

    checkout = fetch("local://alice/run1-trajectories@iter-1")
    diagnosed = load_dataset(str(checkout), "diagnoses", split="train", cache_dir=os.environ["HF_DATASETS_CACHE"])
    assert diagnosed.num_rows == 8 and set(diagnosed["interface_version"]) == {"v0", "v1"}
    assert diagnosed.features["labels"].feature.dtype == "string"
    first = seal_hub.load_trajectories("alice/run1-trajectories@iter-0")
    assert from_rows(first.to_list()) == published["data"][0]
    latest = seal_hub.load_trajectories("alice/run1-trajectories")
    assert latest.num_rows == 12
    card = card_metadata((checkout / "README.md").read_text())
    assert [c["config_name"] for c in card["configs"]] == ["trajectories", "diagnoses"]
    assert (
        card["seal"]["environment"] == "alice/run1-env@v1" and card["seal"]["adapter"] == "alice/run1-adapter@iter-1"
    )


def test_adapters_load_on_their_base_at_each_iteration_with_full_cards(published):
    from peft import PeftModel

    for k in (0, 2):
        model = seal_hub.load_adapter(f"alice/run1-adapter@iter-{k}")
        assert isinstance(model, PeftModel)
        saved = lora_weights(PeftModel.from_pretrained(_base(published["base"]), str(published["adapters"][k])))
        for name, weight in lora_weights(model).items():
            assert torch.equal(weight, saved[name]), name
    folder = fetch("alice/run1-adapter@iter-2", "model")
    metadata = card_metadata((folder / "README.md").read_text())
    # the base is a folder of this machine: named by its folder's name, never its path (adapter_config.json, PEFT's
    # loading contract, still holds the path, so the adapter loads here on its base, as above)
    card = (folder / "README.md").read_text()
    assert "base_model" not in metadata and metadata["seal"]["local_base"] == published["base"].name
    assert str(published["root"]) not in card and f"`{published['base'].name}`" in card
    assert str(published["root"]) not in registry_log(published, "alice/run1-adapter")
    assert metadata["library_name"] == "peft"
    assert {"seal", "trl", "grpo", "tool-use"} <= set(metadata["tags"])
    assert metadata["datasets"] == ["alice/run1-trajectories"]
    assert metadata["seal"]["environment"] == "alice/run1-env@v2"
    assert metadata["seal"]["trajectories"] == "alice/run1-trajectories@iter-2"
    [result] = metadata["model-index"][0]["results"]
    assert result["metrics"][0] == {"type": "accuracy", "value": 0.5, "name": "BFCL multi-turn accuracy"}
    assert "model-index" not in card_metadata((fetch("alice/run1-adapter@iter-0", "model") / "README.md").read_text())
    assert (folder / "adapter_model.safetensors").is_file()


def registry_log(published, repo_id: str) -> str:
    """Every commit message and tag of a local registry repository (a version's title is its commit message)."""
    namespace, name = repo_id.split("/")
    repo = published["registry"].root / "models" / namespace / f"{name}.git"
    return _git(repo, "log", "--all", "--format=%B") + _git(repo, "tag", "-n99")


def _base(path: Path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path)


# the CLI


def test_cli_lists_shows_and_pulls_versions(published, tmp_path, capsys):
    assert main(["hub", "list"]) == 0
    out = capsys.readouterr().out
    assert "3 repositories" in out
    assert "alice/run1-env" in out and "v0 v1 v2" in out
    assert "alice/run1-trajectories" in out and "iter-0 iter-1 iter-2" in out
    assert main(["hub", "show", "alice/run1-adapter"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("local://models/alice/run1-adapter: 3 version(s)")
    assert out.index("iter-0") < out.index("iter-1") < out.index("iter-2")
    assert "adapter_model.safetensors" in out and "card library_name: peft" in out
    assert main(["hub", "pull", "alice/run1-env@v1", "--to", str(tmp_path / "env")]) == 0
    assert (tmp_path / "env" / "interface.json").is_file()
    assert main(["hub", "show", "local://alice/run1-env@v7"]) == 2
    err = capsys.readouterr().err
    assert "alice/run1-env@v7" in err and "v0, v1, v2" in err and "Traceback" not in err


def test_interface_show_and_diff_take_published_refs(registry, capsys):
    from seal_hub.cli import main
    from seal_hub.hub import publish_interface

    first, second = snapshots()[:2]
    for snapshot in (first, second):
        publish_interface("alice/run-env", snapshot, registry=registry)
    assert (
        main(["interface", "diff", f"alice/run-env@{first.version}", f"local://alice/run-env@{second.version}"]) == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"--- alice/run-env@{first.version} ({first.version}, {first.content_hash[:12]})"
    assert out[1].startswith(f"+++ local://alice/run-env@{second.version} ({second.version}, ")
    assert out[2:] == diff(first, second)
    assert main(["interface", "show", "alice/run-env@v99"]) == 2
    assert "v99" in capsys.readouterr().err
