"""`seal-hub eval --publish`: records as a dataset version, scores as model-index on a new adapter version.

Against the local registry and the loopback Hub double (the real `huggingface_hub` client over HTTP).
"""

from __future__ import annotations

import json

import pytest
from helpers.extras import require_bfcl
from helpers.hub_artifacts import adapter
from helpers.hub_double import TOKEN, HubDouble, talk_to

from seal_hub.cli import main
from seal_hub.hub import LocalRegistry, Ref, load_trajectories, publish_policy
from seal_hub.hub.cards import card_metadata
from seal_hub.hub.loading import fetch

require_bfcl()


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from seal_hub.models import build_tiny_model

    root = tmp_path_factory.mktemp("models")
    base = build_tiny_model(root / "tiny")
    return {"base": base, "adapters": [adapter(base, root / f"adapter-{k}", seed=20 + k) for k in range(2)]}


def _eval_and_publish(models, out, adapter_ref, records_repo, capsys):
    argv = ["eval", "--model", str(models["base"]), "--adapter", adapter_ref, "--limit", "2", "--max_new_tokens", "4"]
    code = main([*argv, "--output_dir", str(out), "--no_progress", "--publish", records_repo])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    return printed.out.strip().splitlines()


def _check_published(lines, out, adapter_ref, records_ref, weights_before):
    results = json.loads((out / "results.json").read_text())
    records_tag = next(w for w in lines[-3].split() if "@" in w).split("@")[1]
    adapter_tag = next(w for w in lines[-2].split() if "@" in w).split("@")[1]
    assert lines[-1] == f"eval bfcl: avg {results['scores']['average']:.2f} on 2 tasks"
    # the records, at their version, read back through the same loader as a training run's
    rows = load_trajectories(f"{records_ref}@{records_tag}").to_list()
    assert [r["task_id"] for r in rows] == results["task_ids"]
    records = fetch(f"{records_ref}@{records_tag}", "dataset")
    assert json.loads((records / "results" / f"{records_tag}.json").read_text())["scores"] == results["scores"]
    # the adapter's new version: the same weights, a card with the scores linking the records at their tag
    folder = fetch(f"{adapter_ref.split('@')[0]}@{adapter_tag}", "model")
    assert (folder / "adapter_model.safetensors").read_bytes() == weights_before
    meta = card_metadata((folder / "README.md").read_text())
    metrics = {m["type"]: m for entry in meta["model-index"][0]["results"] for m in entry["metrics"]}
    assert metrics["success_rate"]["value"] == round(results["scores"]["average"], 2)
    assert set(metrics) >= {f"success_rate_{c}" for c in results["scores"]["per_category"]}
    sources = {entry["source"]["url"] for entry in meta["model-index"][0]["results"]}
    assert all(f"/tree/{records_tag}" in url and records_ref.split("://")[-1] in url for url in sources)
    # the adapter card kept its own metadata (its base a local folder here: named by the folder's name, no path)
    assert meta["library_name"] == "peft" and meta["seal"]["local_base"] and "base_model" not in meta
    assert {entry["task"]["name"] for entry in meta["model-index"][0]["results"]} == {"Multi-turn tool use"}
    return results, records_tag, adapter_tag


def test_the_model_index_names_what_the_suite_measures():
    from seal_hub.hub.cards import task_name

    assert task_name("bfcl-single") == "Single-turn tool calling"
    assert {task_name(d) for d in ("bfcl", "bfcl-memory", "tau2-telecom")} == {"Multi-turn tool use"}


def test_publish_to_the_local_registry(models, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(tmp_path / "registry"))
    monkeypatch.setenv("SEAL_HUB_BACKEND", "local")
    registry = LocalRegistry()
    version = publish_policy("alice/run1-adapter", 0, models["adapters"][0], registry=registry)
    weights = (models["adapters"][0] / "adapter_model.safetensors").read_bytes()
    lines = _eval_and_publish(
        models, tmp_path / "out", "local://alice/run1-adapter@iter-0", "local://alice/run1-eval", capsys
    )
    results, records_tag, adapter_tag = _check_published(
        lines, tmp_path / "out", "local://alice/run1-adapter@iter-0", "local://alice/run1-eval", weights
    )
    assert results["adapter"]["commit"] == version.commit and results["adapter"]["revision"] == "iter-0"
    assert (records_tag, adapter_tag) == ("eval-bfcl-test-iter-0", "iter-0-eval-bfcl-test")
    assert [v.tag for v in registry.versions("alice/run1-adapter", "model")] == ["iter-0", adapter_tag]

    # publishing the same evaluation again changes nothing (same content under the same tags)
    again = _eval_and_publish(
        models, tmp_path / "out", "local://alice/run1-adapter@iter-0", "local://alice/run1-eval", capsys
    )
    assert [w for w in again[-3].split() if "@" in w] == [w for w in lines[-3].split() if "@" in w]
    assert [w for w in again[-2].split() if "@" in w] == [w for w in lines[-2].split() if "@" in w]
    assert len(registry.versions("alice/run1-adapter", "model")) == 2

    # a version that is no longer the head of main cannot carry scores on its card
    publish_policy("alice/run1-adapter", 1, models["adapters"][1], registry=registry)
    code = main(
        ["eval", "--model", str(models["base"]), "--adapter", "local://alice/run1-adapter@iter-0", "--limit", "2"]
        + ["--max_new_tokens", "4", "--output_dir", str(tmp_path / "old"), "--no_progress"]
        + ["--publish", "local://alice/run1-eval"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "is not the head of main" in err and err.count("\n") == 1


def test_publish_needs_an_adapter(tmp_path, capsys):
    code = main(["eval", "--model", "oracle", "--output_dir", str(tmp_path / "o"), "--publish", "alice/x-eval"])
    err = capsys.readouterr().err
    assert code == 2 and "give --adapter" in err and not (tmp_path / "o").exists()


@pytest.mark.hub
def test_publish_to_the_hub_double(models, tmp_path, capsys, monkeypatch):
    from seal_hub.hub.hf import HubRegistry

    with HubDouble(token=TOKEN) as double:
        talk_to(monkeypatch, double, tmp_path)
        version = publish_policy("alice/run2-adapter", 0, models["adapters"][0], registry=HubRegistry())
        weights = (models["adapters"][0] / "adapter_model.safetensors").read_bytes()
        lines = _eval_and_publish(
            models, tmp_path / "out", "hf://alice/run2-adapter@iter-0", "alice/run2-eval", capsys
        )
        results, records_tag, adapter_tag = _check_published(
            lines, tmp_path / "out", "hf://alice/run2-adapter@iter-0", "hf://alice/run2-eval", weights
        )
        assert results["adapter"]["commit"] == version.commit and results["adapter"]["backend"] == "hub"
        files = double.files_at("model", "alice/run2-adapter", adapter_tag)
        assert TOKEN.encode() not in files["README.md"]
        assert HubRegistry().resolve(Ref("alice/run2-eval", "dataset", records_tag))


def test_an_adapter_on_a_cpu_generates_merged_as_training_does(models, tmp_path, capsys, monkeypatch):
    from contextlib import contextmanager

    from seal_hub.generation import weights as gd

    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(tmp_path / "registry"))
    publish_policy("alice/run1-adapter", 0, models["adapters"][0], registry=LocalRegistry())
    merged = []
    real = gd.merged_lora

    @contextmanager
    def recording(model, enabled=True):
        with real(model, enabled) as count:
            merged.append(count)
            yield count

    monkeypatch.setattr(gd, "merged_lora", recording)
    argv = ["eval", "--model", str(models["base"]), "--adapter", "local://alice/run1-adapter@iter-0", "--limit", "1"]
    argv += ["--max_new_tokens", "4", "--no_progress"]
    assert main([*argv, "--output_dir", str(tmp_path / "merged")]) == 0
    assert main([*argv, "--output_dir", str(tmp_path / "plain"), "--merge_lora_for_generation", "false"]) == 0
    capsys.readouterr()
    assert merged[0] > 0 and merged[1] == 0  # every LoRA layer merged by default on a CPU; none when told not to
