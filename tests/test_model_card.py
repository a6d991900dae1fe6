"""TRL's model card for a SEAL run: `SealTrainer` declares TRL's metadata (`_name`, `_tag_names`, `_paper`), so
the README.md that TRL writes (`create_model_card`, at every checkpoint and on `push_to_hub`) names SEAL and cites
its paper, not GRPO's; and the cards a run leaves in its folders (TRL's, PEFT's in each checkpoint) name the base
model by Hub id, or as a local model, never by a path of this machine (`seal_hub.hub.cards.correct_training_card`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from helpers.tiny_run import make_trainer


def test_the_card_trl_writes_names_seal_and_its_paper(tmp_path, suite):
    from trl import GRPOTrainer

    from seal_hub.models import build_tiny_model, load_policy
    from seal_hub.models.config import PolicyConfig
    from seal_hub.training import SealConfig, SealTrainer

    model, tokenizer = load_policy(PolicyConfig(model_name_or_path=str(build_tiny_model(tmp_path / "tiny"))))
    args = SealConfig(
        output_dir=str(tmp_path / "run"), use_cpu=True, num_generations=2, per_device_train_batch_size=2, report_to=[]
    )
    trainer = SealTrainer(
        model, args=args, processing_class=tokenizer, suite=suite, train_tasks=suite.select(["multi_turn_base_0"])
    )
    trainer.create_model_card(model_name="seal-tiny")
    card = (tmp_path / "run" / "README.md").read_text()

    front, body = re.match(r"^---\n(.*?)\n---\n(.*)$", card, re.S).groups()
    assert {"trl", "grpo", "seal"} <= set(yaml.safe_load(front)["tags"])
    assert "trained with SEAL" in body and "trained with GRPO" not in body
    assert SealTrainer._paper["title"] in body and "https://huggingface.co/papers/2605.24426" in body
    assert "@article{hu2026seal," in body and GRPOTrainer._paper["title"] not in body
    assert set(SealTrainer._tag_names) <= set(trainer.model.model_tags or [])


STANDS_IN_FOR = "HuggingFaceTB/SmolLM2-135M-Instruct"


def cards_of(out: Path) -> dict[str, str]:
    """Every README.md under a run's folder: the output dir's and each checkpoint's."""
    return {str(p.relative_to(out)): p.read_text() for p in sorted(out.rglob("README.md"))}


@pytest.mark.parametrize("stand_in", [True, False], ids=["converted-stand-in", "plain-local-folder"])
def test_the_cards_a_run_leaves_name_the_base_by_hub_id_and_no_host_path(suite, tmp_path, stand_in):
    """A one-step LoRA run from a local folder: TRL's card in the output dir and PEFT's in each checkpoint hold no
    absolute path, no TRL licence placeholder and no "[None](https://huggingface.co/None)". A converted stand-in (as
    the offline demo model is) is named by the Hub id it stands in for; a plain folder by its folder's name."""
    from seal_hub.models import build_tiny_model

    base = build_tiny_model(tmp_path / "models" / "tiny")
    if stand_in:
        (base / "seal_hub_conversion.json").write_text(json.dumps({"stands_in_for": STANDS_IN_FOR}))
    trainer = make_trainer(suite, base, tmp_path, max_steps=1)
    trainer.train()
    trainer.save_model()
    out = Path(trainer.args.output_dir)
    cards = cards_of(out)
    assert set(cards) == {"README.md", "checkpoint-1/README.md"}
    for name, text in cards.items():
        front = yaml.safe_load(re.match(r"^---\n(.*?)\n---\n", text, re.S).group(1))
        assert not re.search(r"(?<![\w:/.])/(home|root|tmp|work|Users|var)\b", text), name  # no absolute path
        assert str(tmp_path) not in text and str(base) not in text, name
        assert "licence" not in front and "huggingface.co/None" not in text, name
        assert "lora" in front["tags"], name
        if stand_in:
            assert front["base_model"] == STANDS_IN_FOR and f"base_model:adapter:{STANDS_IN_FOR}" in front["tags"]
        else:
            assert "base_model" not in front and not any("base_model:" in tag for tag in front["tags"]), name
    if stand_in:
        assert f"fine-tuned version of [{STANDS_IN_FOR}](https://huggingface.co/{STANDS_IN_FOR})" in cards["README.md"]
    else:
        assert "fine-tuned version of a local model `tiny`" in cards["README.md"]
    assert "trained with SEAL" in cards["README.md"]
    assert 'model="None"' not in cards["README.md"] and 'model="path/to/this/folder"' in cards["README.md"]


def test_a_publishing_runs_card_quick_start_loads_its_published_policy(suite, tmp_path, monkeypatch):
    from seal_hub.hub import PublishConfig
    from seal_hub.hub.callback import PublishCallback
    from seal_hub.models import build_tiny_model

    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(tmp_path / "registry"))
    publisher = PublishCallback(PublishConfig(run="alice/card-run", backend="local"))
    trainer = make_trainer(suite, build_tiny_model(tmp_path / "tiny"), tmp_path, max_steps=1, callbacks=[publisher])
    trainer.create_model_card(model_name="card-run")
    card = (Path(trainer.args.output_dir) / "README.md").read_text()
    assert 'pipeline("text-generation", model="alice/card-run-adapter"' in card and "None" not in card


def test_a_card_of_a_model_only_on_this_machine_names_no_base(tmp_path):
    """A base with no Hub id (a folder of this machine): no base_model, no tag with its path, "a local model"."""
    from seal_hub.hub.cards import correct_training_card

    local = tmp_path / "my-model"
    local.mkdir()
    card = (
        f"---\nbase_model: {local}\nlibrary_name: peft\nlicence: license\n"
        f"tags:\n- base_model:adapter:{local}\n- lora\n- seal\n---\n\n"
        "This model is a fine-tuned version of [None](https://huggingface.co/None).\n"
        f"Loaded from {local}.\n"
    )
    (tmp_path / "README.md").write_text(card)
    correct_training_card(tmp_path, str(local))
    text = (tmp_path / "README.md").read_text()
    front = yaml.safe_load(re.match(r"^---\n(.*?)\n---\n", text, re.S).group(1))
    assert front == {"library_name": "peft", "tags": ["lora", "seal"]}
    assert str(local) not in text and "fine-tuned version of a local model `my-model`." in text
    assert "Loaded from a local model `my-model`." in text
