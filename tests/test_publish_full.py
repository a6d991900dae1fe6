"""A full fine-tune (`use_peft` off) publishes its whole model as the policy artifact, and every consumer of a
published policy (`load_model`, `resolve_reference` + `attach_policy`, the replay Space's loader) loads it back
by ``repo@revision`` with the checkpoint's weights; a checkpoint without consolidated weights is refused."""

from __future__ import annotations

import json

import pytest
import torch
from helpers.scripted import half_right
from helpers.tiny_run import tiny_run_settings
from safetensors.torch import load_file

TASKS = ["multi_turn_base_1", "multi_turn_base_3"]
RUN = "demo/full-run"
POLICY = f"{RUN}-adapter"


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from seal_hub.models import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny"))


def full_trainer(suite, tiny_dir, tmp_path):
    from seal_hub.models import PolicyConfig, load_policy
    from seal_hub.training import SealConfig, SealTrainer

    model, tokenizer = load_policy(PolicyConfig(model_name_or_path=str(tiny_dir), use_peft=False))
    config = SealConfig(**tiny_run_settings(tmp_path))
    from seal_hub.hub import PublishConfig
    from seal_hub.hub.callback import PublishCallback

    return SealTrainer(
        model,
        args=config,
        processing_class=tokenizer,
        callbacks=[PublishCallback(PublishConfig(run=RUN, backend="local"))],
        suite=suite,
        train_tasks=suite.select(TASKS),
        policy_id="tiny",
        backend_factory=half_right(suite),
    )


def same_weights(model, weights: dict[str, torch.Tensor]) -> bool:
    state = model.state_dict()
    return all(torch.equal(state[name], tensor) for name, tensor in weights.items())


@pytest.fixture(scope="module")
def published(suite, tiny_dir, tmp_path_factory):
    """A 2-step full fine-tune publishing each checkpoint to a local registry (base model: the model's own path)."""
    tmp_path = tmp_path_factory.mktemp("full")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SEAL_HUB_REGISTRY", str(tmp_path / "registry"))
        trainer = full_trainer(suite, tiny_dir, tmp_path)
        assert not hasattr(trainer.model, "peft_config")  # the whole model trains
        trainer.train()
        yield trainer, tmp_path
    # (the registry stays in tmp_path for the tests below, which set SEAL_HUB_REGISTRY again)


@pytest.fixture
def registry(published, monkeypatch):
    from seal_hub.hub import get_registry

    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(published[1] / "registry"))
    return get_registry("local")


def checkpoint_weights(published, step: int) -> dict[str, torch.Tensor]:
    return load_file(str(published[1] / "run" / f"checkpoint-{step}" / "model.safetensors"))


def test_a_full_fine_tune_publishes_each_checkpoint_as_a_full_model(published, registry, tiny_dir):
    from seal_hub.hub import Ref
    from seal_hub.hub.cards import card_metadata

    trainer, _ = published
    tags = lambda repo, kind: [v.tag for v in registry.versions(repo, kind)]  # noqa: E731
    assert tags(POLICY, "model") == ["iter-1", "iter-2"]
    assert tags(f"{RUN}-trajectories", "dataset") == ["iter-1", "iter-2"]
    assert trainer.publish_pending() == []  # nothing left: repeating is a no-op
    folder = registry.download(Ref(POLICY, "model", "iter-2"))
    files = {p.name for p in folder.iterdir() if p.is_file()}
    assert {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja"} <= (
        files
    )
    assert not files & {"adapter_config.json", "training_args.bin", "optimizer.pt", "trainer_state.json"}
    assert not list((published[1] / "run").glob(".seal_hub-publish-*"))  # the staging beside the checkpoint is gone
    card = (folder / "README.md").read_text()
    meta = card_metadata(card)
    assert meta["library_name"] == "transformers" and meta["base_model_relation"] == "finetune"
    # the base was a folder of this machine: the card names it by the folder's name only, no path anywhere
    assert "base_model" not in meta and meta["seal"]["local_base"] == tiny_dir.name
    assert str(tiny_dir) not in card and f"A full fine-tune of `{tiny_dir.name}`" in card
    assert str(tiny_dir) not in registry.versions(POLICY, "model")[-1].title
    assert "full-fine-tune" in meta["tags"] and "lora" not in meta["tags"]
    assert meta["seal"]["iteration"] == 2 and meta["seal"]["trajectories"] == f"{RUN}-trajectories@iter-2"
    assert "A full fine-tune of" in card and "AutoModelForCausalLM.from_pretrained" in card and "PeftModel" not in card
    assert "full fine-tune of" in registry.versions(POLICY, "model")[-1].title


def test_each_version_loads_back_by_reference_with_its_checkpoints_weights(published, registry):
    import seal_hub
    from seal_hub.hub import HubError

    first, second = (checkpoint_weights(published, step) for step in (1, 2))
    assert any(not torch.equal(first[n], second[n]) for n in first)  # the two versions differ
    for tag, weights in (("iter-1", first), ("iter-2", second)):
        model = seal_hub.load_model(f"local://{POLICY}@{tag}")
        assert type(model).__name__ == "Qwen2ForCausalLM" and not model.training
        assert same_weights(model, weights), tag
    with pytest.raises(HubError, match="full fine-tune.*load_model"):
        seal_hub.load_adapter(f"{POLICY}@iter-1")


def test_the_cli_paths_put_a_full_model_on_its_base(published, registry, tiny_dir):
    """`seal-hub eval/rollout --adapter` and `--init_adapter`: resolve, check the base, attach (weights in place)."""
    from seal_hub.hub import SourceError, attach_policy, check_base_model, resolve_reference
    from seal_hub.models import PolicyConfig, load_policy
    from seal_hub.replay.policies import load_named

    resolved = resolve_reference(f"{POLICY}@iter-1", "adapter")
    assert resolved.value.kind == "full" and resolved.value.base_model == tiny_dir.name and resolved.value.local_base
    check_base_model(resolved, str(tiny_dir))  # a local base is compared by its folder's name
    with pytest.raises(SourceError, match="trained on base model"):
        check_base_model(resolved, "org/other-model")
    base, _ = load_policy(PolicyConfig(model_name_or_path=str(tiny_dir)))
    assert not same_weights(base, checkpoint_weights(published, 1))
    assert attach_policy(base, resolved) is base and same_weights(base, checkpoint_weights(published, 1))
    model, tokenizer = load_named(f"{POLICY}@iter-2")  # the replay Space's loader
    assert same_weights(model, checkpoint_weights(published, 2)) and tokenizer.chat_template


def test_a_sharded_full_model_publishes_its_index_and_shards(tiny_dir, tmp_path, monkeypatch):
    import seal_hub
    from seal_hub.hub import Ref, get_registry, publish_policy
    from seal_hub.models import PolicyConfig, load_policy

    model, tokenizer = load_policy(PolicyConfig(model_name_or_path=str(tiny_dir)))
    torch.nn.init.normal_(model.model.norm.weight)  # not the base's weights
    model.save_pretrained(tmp_path / "model", max_shard_size="200KB")
    tokenizer.save_pretrained(tmp_path / "model")
    index = json.loads((tmp_path / "model" / "model.safetensors.index.json").read_text())
    shards = sorted(set(index["weight_map"].values()))
    assert len(shards) > 1
    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(tmp_path / "registry"))
    registry = get_registry("local")
    publish_policy("alice/sharded-adapter", 3, tmp_path / "model", base_model="org/tiny", registry=registry)
    folder = registry.download(Ref("alice/sharded-adapter", "model", "iter-3"))
    assert set(shards) | {"model.safetensors.index.json"} <= {p.name for p in folder.iterdir()}
    loaded = seal_hub.load_model(Ref("alice/sharded-adapter", "model", "iter-3", "local"))
    assert same_weights(loaded, model.state_dict())


def test_a_checkpoint_without_consolidated_weights_is_refused(tiny_dir, tmp_path):
    """ZeRO-3 with zero3_save_16bit_model false: config.json and DeepSpeed's shards, no model.safetensors."""
    import shutil

    from seal_hub.hub import LocalRegistry, publish_policy
    from seal_hub.hub.policy import MissingWeightsError

    checkpoint = tmp_path / "checkpoint-1"
    (checkpoint / "global_step1").mkdir(parents=True)
    shutil.copy2(tiny_dir / "config.json", checkpoint / "config.json")
    registry = LocalRegistry(tmp_path / "registry")
    with pytest.raises(MissingWeightsError, match="DeepSpeed's shards.*zero3_save_16bit_model: true"):
        publish_policy("alice/zero3-adapter", 1, checkpoint, base_model="org/tiny", registry=registry)
    assert not registry.repo_exists("alice/zero3-adapter", "model")


def test_the_zero3_recipes_save_consolidated_weights():
    """A full fine-tune under the recipes' ZeRO-3 configs has weights to publish (see the test above)."""
    from pathlib import Path

    import yaml

    configs = sorted((Path(__file__).parents[1] / "recipes" / "accelerate").glob("zero3*.yaml"))
    assert configs
    for path in configs:
        assert yaml.safe_load(path.read_text())["deepspeed_config"]["zero3_save_16bit_model"] is True, path.name
