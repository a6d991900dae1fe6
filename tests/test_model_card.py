"""TRL's model card for a SEAL run: `SealTrainer` declares TRL's metadata (`_name`, `_tag_names`, `_paper`), so
the README.md that TRL writes (`create_model_card`, at every checkpoint and on `push_to_hub`) names SEAL and cites
its paper, not GRPO's."""

from __future__ import annotations

import re

import yaml


def test_the_card_trl_writes_names_seal_and_its_paper(tmp_path, suite):
    from trl import GRPOTrainer

    from seal_hub.models import build_tiny_model, load_policy
    from seal_hub.models.config import PolicyConfig
    from seal_hub.training import SealConfig, SealTrainer

    model, tokenizer = load_policy(PolicyConfig(model_name_or_path=str(build_tiny_model(tmp_path / "tiny"))))
    args = SealConfig(
        output_dir=str(tmp_path / "run"), use_cpu=True, num_generations=2, per_device_train_batch_size=2, report_to=[]
    )
    trainer = SealTrainer(model, args, suite, suite.select(["multi_turn_base_0"]), tokenizer)
    trainer.create_model_card(model_name="seal-tiny")
    card = (tmp_path / "run" / "README.md").read_text()

    front, body = re.match(r"^---\n(.*?)\n---\n(.*)$", card, re.S).groups()
    assert {"trl", "grpo", "seal"} <= set(yaml.safe_load(front)["tags"])
    assert "trained with SEAL" in body and "trained with GRPO" not in body
    assert SealTrainer._paper["title"] in body and "https://huggingface.co/papers/2605.24426" in body
    assert "@article{hu2026seal," in body and GRPOTrainer._paper["title"] not in body
    assert set(SealTrainer._tag_names) <= set(trainer.model.model_tags or [])
