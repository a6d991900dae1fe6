"""One policy loader: a published policy is found by what the registry holds and what its files and card say, never
by its repository's name, and PEFT loads an adapter in one place of the package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch
from helpers.hub_artifacts import adapter, lora_weights

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from seal_hub.models import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny"))


@pytest.fixture
def registry(tmp_path, monkeypatch):
    from seal_hub.hub import get_registry

    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(tmp_path / "registry"))
    monkeypatch.setenv("SEAL_HUB_BACKEND", "local")
    return get_registry("local")


def test_peft_loads_an_adapter_in_one_place_of_the_package():
    found = []
    for path in sorted((ROOT / "seal_hub").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            called = isinstance(node, ast.Attribute) and node.attr == "from_pretrained"
            if called and isinstance(node.value, ast.Name) and node.value.id == "PeftModel":
                found.append(str(path.relative_to(ROOT)))
    assert found == ["seal_hub/hub/sources.py"]


def test_the_spaces_loader_finds_a_published_adapter_by_the_registry_not_by_its_name(tiny_dir, tmp_path, registry):
    from peft import PeftModel

    from seal_hub.hub import HubError, publish_policy
    from seal_hub.replay.policies import load_named, published_policy

    publish_policy("alice/tool-policy", 0, adapter(tiny_dir, tmp_path / "a", seed=1), registry=registry)
    policy = published_policy("alice/tool-policy@iter-0")  # no "-adapter" in the name
    assert policy is not None and policy.kind == "adapter" and Path(policy.base_model).name == tiny_dir.name
    model, tokenizer = load_named("alice/tool-policy@iter-0")
    assert isinstance(model, PeftModel) and tokenizer.chat_template
    expected = lora_weights(PeftModel.from_pretrained(_base(tiny_dir), str(tmp_path / "a")))
    assert all(torch.equal(lora_weights(model)[name], weight) for name, weight in expected.items())
    # a name no registry holds is a model id, "-adapter" in it or not; a scheme names a registry that must hold it
    assert published_policy("org/base-adapter") is None
    with pytest.raises(HubError, match="no model repository alice/ghost-adapter in the local registry"):
        published_policy("local://alice/ghost-adapter@iter-0")


def test_load_adapter_load_model_and_the_experiment_read_the_folder_not_the_name(tiny_dir, tmp_path, registry):
    import seal_hub
    from seal_hub.hub import load_policy_version, publish_policy, read_policy
    from seal_hub.models import PolicyConfig

    folder = adapter(tiny_dir, tmp_path / "run-output", seed=2)  # a run's own output folder, as the experiment has
    published = read_policy(folder, base=str(tiny_dir))
    assert published.kind == "adapter" and published.where == str(folder)
    model, _ = load_policy_version(published, base=PolicyConfig(model_name_or_path=str(tiny_dir)))
    weights = lora_weights(model)
    publish_policy("alice/plain", 4, folder, registry=registry)
    for loaded in (seal_hub.load_adapter("alice/plain@iter-4"), seal_hub.load_model("local://alice/plain@iter-4")):
        assert all(torch.equal(lora_weights(loaded)[name], weight) for name, weight in weights.items())
        assert not any(p.requires_grad for p in loaded.parameters())
    with pytest.raises(seal_hub.hub.HubError, match="holds no adapter_config.json nor config.json"):
        read_policy(tmp_path)


def test_one_interface_loader_takes_a_reference_or_a_snapshot_file(tmp_path, registry):
    from seal_hub.hub import load_interface, publish_interface
    from seal_hub.interface import InterfaceSnapshot

    snapshot = InterfaceSnapshot.null("bfcl")
    publish_interface("alice/run-env", snapshot, registry=registry)
    path = snapshot.save(tmp_path / "v0.json")
    assert load_interface(str(path)).content_hash == load_interface("alice/run-env@v0").content_hash


def _base(tiny_dir):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_dir)
