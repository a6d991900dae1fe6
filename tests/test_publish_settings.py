"""A run has one publishing surface: `--publish_run`, `--publish_backend`, `--publish_private` (YAML keys of the same
names), which become the trainer's `PublishCallback` and its `PublishConfig`. transformers' own push of output_dir
(`push_to_hub`, `hub_model_id`, `hub_private_repo`, `Trainer.push_to_hub()`) is refused in one line naming what to
set instead."""

from __future__ import annotations

import pytest
import yaml
from helpers.paths import DEMO_CONFIG
from helpers.recipes import parse


def test_publish_private_reaches_publish_config_from_a_flag_and_from_yaml(monkeypatch, tmp_path):
    from seal_hub.hub.callback import PublishCallback
    from seal_hub.scripts.seal import publish_callback

    def publish_config(script, model):
        callback = publish_callback(script, model)
        assert callback is None or isinstance(callback, PublishCallback)
        return callback.config if callback is not None else None

    flags = ("--output_dir", str(tmp_path), "--publish_run", "alice/run1", "--publish_backend", "hub")
    script, _, model, *_ = parse(DEMO_CONFIG, *flags, "--publish_private", "true", monkeypatch=monkeypatch)
    publish = publish_config(script, model)
    assert (publish.run, publish.backend, publish.private) == ("alice/run1", "hub", True)
    assert publish.base_model == model.model_name_or_path

    config = yaml.safe_load(DEMO_CONFIG.read_text()) | {"publish_backend": "auto", "publish_private": True}
    (tmp_path / "private.yaml").write_text(yaml.safe_dump(config))
    script, _, model, *_ = parse(tmp_path / "private.yaml", "--output_dir", str(tmp_path), monkeypatch=monkeypatch)
    assert publish_config(script, model).private is True
    script, _, model, *_ = parse(DEMO_CONFIG, "--output_dir", str(tmp_path), monkeypatch=monkeypatch)
    assert publish_config(script, model).private is False  # the demo: local registry, not private
    flags = ("--output_dir", str(tmp_path), "--publish_run", "")
    script, _, model, *_ = parse(DEMO_CONFIG, *flags, monkeypatch=monkeypatch)
    assert publish_config(script, model) is None  # no run id: nothing published


def test_the_hub_registry_is_created_private_when_asked(monkeypatch):
    from seal_hub.hub import PublishConfig

    monkeypatch.setenv("HF_TOKEN", "hf_test")
    registry = PublishConfig(run="alice/run1", backend="hub", private=True).registry()
    assert registry.private is True


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--publish_run", "alice/run1", "--publish_backend", "local", "--publish_private", "true"), "Hub only"),
        (("--publish_run", "", "--publish_private", "true"), "publish_run is not"),
    ],
)
def test_publish_private_where_it_cannot_apply_is_refused(flags, message, monkeypatch, tmp_path):
    with pytest.raises(ValueError, match=message):
        parse(DEMO_CONFIG, "--output_dir", str(tmp_path), *flags, monkeypatch=monkeypatch)


@pytest.mark.parametrize(
    "flags",
    [("--push_to_hub", "true"), ("--hub_model_id", "alice/run1"), ("--hub_private_repo", "true")],
    ids=["push_to_hub", "hub_model_id", "hub_private_repo"],
)
def test_transformers_push_settings_are_refused_naming_publish_run(flags, monkeypatch, tmp_path, capsys):
    from seal_hub.scripts.seal import run

    with pytest.raises(ValueError, match=rf"^{flags[0][2:]}: .*set publish_run"):
        parse(DEMO_CONFIG, "--output_dir", str(tmp_path), *flags, monkeypatch=monkeypatch)
    assert run(["--output_dir", str(tmp_path), *flags]) == 2  # `seal-hub train`: one line, no traceback
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"seal-hub train: error: {flags[0][2:]}") and "publish_run" in err
    assert "\n" not in err and "Traceback" not in err


def test_the_trainer_refuses_transformers_push(suite, tmp_path):
    from helpers.tiny_run import make_trainer

    from seal_hub.models import build_tiny_model

    trainer = make_trainer(suite, build_tiny_model(tmp_path / "tiny"), tmp_path, max_steps=1)
    with pytest.raises(ValueError, match=r"callbacks=\[PublishCallback\(PublishConfig"):
        trainer.push_to_hub()
