"""The Hub backend against a loopback Hub double (`hub_double.HubDouble`): publishing and loading through the real
`huggingface_hub` client, `datasets.load_dataset` on a Hub id, sync from the local registry, interrupted and racing
pushes, wrong revisions, offline mode, and that HF_TOKEN never lands in a card, a dataset, a log or an error."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from helpers.hub_artifacts import adapter, diagnoses, lora_weights, snapshots, trajectories
from helpers.hub_double import TOKEN, HubDouble, talk_to

import seal_hub
from seal_hub.cli import main
from seal_hub.hub import (
    EvalScore,
    HubError,
    LocalRegistry,
    Ref,
    RepoNotFoundError,
    RevisionNotFoundError,
    RunRepos,
    publish_interface,
    publish_iteration,
    publish_policy,
)
from seal_hub.hub.cards import card_metadata
from seal_hub.hub.hf import HubRegistry
from seal_hub.rollout.records import from_rows

pytestmark = pytest.mark.hub

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from seal_hub.models import build_tiny_model

    root = tmp_path_factory.mktemp("models")
    base = build_tiny_model(root / "tiny")
    return {"base": base, "adapters": [adapter(base, root / f"adapter-{k}", seed=10 + k) for k in range(3)]}


def _publish_run(models, registry, iterations: int = 2) -> list[list]:
    data = [trajectories(k, interface_version=f"v{k}") for k in range(iterations)]
    for k, snapshot in enumerate(snapshots()[:iterations]):
        publish_iteration(
            RunRepos.of("alice/run1"),
            k,
            trajectories=data[k],
            diagnoses=diagnoses(data[k]),
            snapshot=snapshot,
            adapter_dir=models["adapters"][k],
            results=[EvalScore("accuracy", 0.5, name="BFCL multi-turn accuracy")],
            registry=registry,
        )
    return data


@pytest.fixture(scope="module")
def hub_run(models, tmp_path_factory):
    """Two iterations published straight to one double, shared by the read-only tests."""
    root = tmp_path_factory.mktemp("hub-run")
    with HubDouble(token=TOKEN) as double, pytest.MonkeyPatch.context() as patch:
        talk_to(patch, double, root)
        data = _publish_run(models, HubRegistry())
        yield {"double": double, "data": data, "root": root, **models}


@pytest.fixture
def online(hub_run, monkeypatch):
    talk_to(monkeypatch, hub_run["double"], hub_run["root"])
    return hub_run


@pytest.fixture
def hub(tmp_path, monkeypatch):
    with HubDouble(token=TOKEN) as double:
        talk_to(monkeypatch, double, tmp_path)
        yield double


def test_publishing_to_the_hub_tags_each_version_with_files_at_the_right_revision(online):
    double = online["double"]
    registry = HubRegistry()
    assert [v.tag for v in registry.versions("alice/run1-env", "dataset")] == ["v0", "v1"]
    assert list(double.repo("dataset", "alice/run1-trajectories").tags) == ["iter-0", "iter-1"]
    first = double.files_at("dataset", "alice/run1-trajectories", "iter-0")
    assert set(first) == {".gitattributes", "README.md", "trajectories/iter-0.parquet", "diagnoses/iter-0.parquet"}
    later = double.files_at("dataset", "alice/run1-trajectories", "iter-1")
    assert {"trajectories/iter-0.parquet", "trajectories/iter-1.parquet", "diagnoses/iter-1.parquet"} <= set(later)
    commit = double.resolve(double.repo("dataset", "alice/run1-trajectories"), "iter-1")
    assert commit.files["trajectories/iter-1.parquet"].lfs_sha  # Parquet went through LFS basic transfer
    adapter_files = double.resolve(double.repo("model", "alice/run1-adapter"), "iter-0").files
    assert adapter_files["adapter_model.safetensors"].lfs_sha
    card = double.files_at("model", "alice/run1-adapter", "iter-1")["README.md"].decode()
    metadata = card_metadata(card)
    assert metadata["seal"]["environment"] == "alice/run1-env@v1" and metadata["library_name"] == "peft"
    assert metadata["model-index"][0]["results"][0]["metrics"][0]["value"] == 0.5
    assert "https://huggingface.co/datasets/alice/run1-trajectories/tree/iter-1" in card


def test_the_same_loading_calls_read_the_hub(online):
    assert seal_hub.load_interface("alice/run1-env@v1").content_hash == snapshots()[1].content_hash
    assert seal_hub.load_interface("hf://datasets/alice/run1-env@v0").is_null
    diagnosed = seal_hub.load_trajectories("hf://alice/run1-trajectories@iter-0", "diagnoses")
    assert diagnosed.num_rows == 4 and set(diagnosed["interface_version"]) == {"v0"}
    rows = seal_hub.load_trajectories("alice/run1-trajectories@iter-1").to_list()
    assert from_rows(rows) == online["data"][0] + online["data"][1]
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    model = seal_hub.load_adapter("alice/run1-adapter@iter-0")
    saved = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(online["base"]), str(online["adapters"][0]))
    expected = lora_weights(saved)
    assert all(torch.equal(weight, expected[name]) for name, weight in lora_weights(model).items())


def test_datasets_load_dataset_reads_both_configurations_from_the_hub_at_each_revision(online, tmp_path):
    script = textwrap.dedent(
        """
        from datasets import load_dataset
        for revision in ("iter-0", "iter-1"):
            rows = load_dataset("alice/run1-trajectories", "diagnoses", revision=revision, split="train")
            print(revision, rows.num_rows, sorted(set(rows["interface_version"])))
        rollouts = load_dataset("alice/run1-trajectories", "trajectories", revision="iter-0", split="train")
        print("trajectories", rollouts.num_rows, rollouts[0]["task_id"])
        """
    )
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines == ["iter-0 4 ['v0']", "iter-1 8 ['v0', 'v1']", "trajectories 4 multi_turn_base_0_0"]


def test_sync_publishes_every_local_version_in_order_and_a_second_sync_pushes_nothing(hub, models, capsys):
    local = LocalRegistry()
    _publish_run(models, local, iterations=3)
    assert main(["hub", "sync", "local://alice", "hf://alice"]) == 0
    out = capsys.readouterr().out
    assert "synced 3 repositories: 9 version(s) pushed, 0 already there" in out
    registry = HubRegistry()
    for listing in local.list_repos("alice"):
        kind, repo_id = listing.repo_type, listing.repo_id
        local_tags = [v.tag for v in listing.versions]
        assert [v.tag for v in registry.versions(repo_id, kind)] == local_tags
        history = [c["id"] for c in reversed(_commits(hub, kind, repo_id))]
        positions = [history.index(hub.repo(kind, repo_id).tags[tag]) for tag in local_tags]
        assert positions == sorted(positions) and len(set(positions)) == len(positions)
        for tag in local_tags:
            checkout = local.download(Ref(repo_id, kind, tag))
            expected = {p.relative_to(checkout).as_posix(): p.read_bytes() for p in checkout.rglob("*") if p.is_file()}
            assert hub.files_at(kind, repo_id, tag) == expected
    writes = len([r for r in hub.requests if r[0] in ("POST", "PUT") and "/api/repos/create" not in r[1]])
    assert main(["hub", "sync", "local://alice", "hf://alice"]) == 0
    assert "0 version(s) pushed, 9 already there" in capsys.readouterr().out
    again = [r for r in hub.requests if r[0] in ("POST", "PUT") and "/api/repos/create" not in r[1]]
    assert len(again) == writes  # nothing committed, uploaded or tagged the second time
    assert main(["hub", "list", "hf://alice"]) == 0
    assert "alice/run1-adapter" in capsys.readouterr().out


def _commits(double: HubDouble, kind: str, repo_id: str) -> list[dict]:
    import json
    from urllib.request import urlopen

    prefix = "datasets" if kind == "dataset" else "models"
    with urlopen(f"{double.endpoint}/api/{prefix}/{repo_id}/commits/main") as response:
        return json.loads(response.read())


def test_a_hub_version_syncs_back_into_a_local_registry(online, tmp_path):
    from seal_hub.hub import sync_repo

    target = LocalRegistry(tmp_path / "home")
    report = sync_repo(Ref.parse("hf://alice/run1-env"), Ref.parse("local://bob/env"), target=target)
    assert report.pushed == ["v0", "v1"]
    assert [v.tag for v in target.versions("bob/env", "dataset")] == ["v0", "v1"]
    assert (target.download(Ref("bob/env", "dataset", "v1")) / "interface.json").is_file()


def test_a_hub_push_interrupted_before_its_commit_or_its_tag_leaves_the_previous_version_latest(hub, models):
    registry = HubRegistry()
    first = publish_policy("alice/ad", 0, models["adapters"][0], registry=registry)
    objects = len(hub.lfs)
    hub.fail_commits = True
    with pytest.raises(HubError, match="alice/ad@iter-1") as failed:
        publish_policy("alice/ad", 1, models["adapters"][1], registry=registry)
    assert "500" in str(failed.value)
    assert len(hub.lfs) > objects  # the weights were uploaded, yet no version names them
    assert [v.tag for v in registry.versions("alice/ad", "model")] == ["iter-0"]
    assert registry.resolve(Ref("alice/ad", "model")) == first.commit
    hub.fail_commits, hub.fail_tags = False, True
    with pytest.raises(HubError, match="alice/ad@iter-1"):
        publish_policy("alice/ad", 1, models["adapters"][1], registry=registry)
    assert [v.tag for v in registry.versions("alice/ad", "model")] == ["iter-0"]  # committed, but not a version
    hub.fail_tags = False
    second = publish_policy("alice/ad", 1, models["adapters"][1], registry=registry)
    assert [v.tag for v in registry.versions("alice/ad", "model")] == ["iter-0", "iter-1"]
    assert second.commit == registry.resolve(Ref("alice/ad", "model"))
    assert len(_commits(hub, "model", "alice/ad")) == 3  # initial, iter-0, iter-1: the retry added no commit


def test_a_hub_push_built_on_a_stale_head_is_refused(hub, monkeypatch, tmp_path):
    registry = HubRegistry()
    v0, v1, _ = snapshots()
    publish_interface("alice/env", v0, registry=registry)
    stale = registry.resolve(Ref("alice/env", "dataset"))
    publish_interface("alice/env", v1, registry=registry)  # another writer moved main
    monkeypatch.setattr(HubRegistry, "_head", lambda self, repo_id, repo_type: stale)
    folder = tmp_path / "late"
    folder.mkdir()
    (folder / "interface.json").write_text("{}")
    with pytest.raises(HubError, match="A commit has happened since"):
        registry.push("alice/env", "dataset", folder, tag="v1-copy", message="late", keep_existing=False)
    assert [v.tag for v in registry.versions("alice/env", "dataset")] == ["v0", "v1"]


def test_a_missing_repository_or_revision_on_the_hub_names_the_ref(online, capsys):
    with pytest.raises(RevisionNotFoundError, match=r"alice/run1-env@v9.*'v9'.*versions: v0, v1"):
        seal_hub.load_interface("alice/run1-env@v9")
    with pytest.raises(RepoNotFoundError, match="alice/nothing"):
        seal_hub.load_adapter("hf://alice/nothing@iter-0")
    assert main(["hub", "show", "hf://alice/run1-adapter@iter-7"]) == 2
    err = capsys.readouterr().err
    assert "alice/run1-adapter@iter-7" in err and "iter-0, iter-1" in err


def test_offline_mode_stops_hub_calls_with_a_clear_message(hub, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(HubError, match="HF_HUB_OFFLINE=1"):
        publish_interface("alice/env", snapshots()[0], registry=HubRegistry())
    with pytest.raises(HubError, match=r"alice/env@v0.*HF_HUB_OFFLINE=1"):
        seal_hub.load_interface("hf://alice/env@v0")
    assert hub.requests == []


def test_hf_token_never_reaches_a_card_a_dataset_a_log_or_an_error(hub, models, tmp_path, caplog, capsys):
    for name in (None, "huggingface_hub", "httpx2", "datasets", "seal_hub"):
        caplog.set_level(logging.DEBUG, logger=name)
    local = LocalRegistry()
    _publish_run(models, local, iterations=2)
    assert main(["hub", "sync", "local://alice", "hf://alice"]) == 0
    seal_hub.load_trajectories("alice/run1-trajectories@iter-1")
    seal_hub.load_interface("alice/run1-env@v1")
    errors = []
    for call in (
        lambda: seal_hub.load_interface("alice/run1-env@v9"),
        lambda: seal_hub.load_interface("hf://alice/missing@v1"),
    ):
        with pytest.raises(HubError) as caught:
            call()
        errors.append(str(caught.value))
    hub.token = "hf_another_token"  # the server now refuses our token: the error must not quote it
    with pytest.raises(HubError) as refused:
        publish_interface("alice/other", snapshots()[0], registry=HubRegistry())
    errors.append(str(refused.value))
    assert "401" in errors[-1]
    assert main(["hub", "sync", "local://alice", "hf://carol"]) == 2
    stored = [
        data
        for repo in hub.repos.values()
        for c in repo.commits.values()
        for b in c.files.values()
        for data in [b.data or b""]
    ]
    stored += list(hub.lfs.values())
    git_objects = [
        subprocess.run(
            ["git", f"--git-dir={repo}", "cat-file", "--batch-all-objects", "--batch"], capture_output=True, check=True
        ).stdout
        for repo in (tmp_path / "registry").glob("*/*/*.git")
    ]
    files = [p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and ".git" not in p.parts]
    out = capsys.readouterr()
    texts = [caplog.text, out.out, out.err, *errors]
    assert len(stored) > 10 and len(git_objects) == 3 and files and "Authorization" not in caplog.text
    assert f"{hub.endpoint}/api/" in caplog.text  # the client's debug log was captured
    secret = TOKEN.encode()
    assert not [t for t in texts if TOKEN in t]
    assert not [blob for blob in stored + git_objects + files if secret in blob]
