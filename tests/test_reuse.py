"""Reusing published artifacts: train from a published environment version and adapter (local registry and the
loopback Hub double), cards that name the sources at their commits, `load_environment` rendering what the trainer
rendered, `seal-hub rollout --interface --adapter`, and the errors of missing or mismatched references."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from helpers.extras import require_bfcl
from helpers.hub_artifacts import adapter, lora_weights, snapshots
from helpers.hub_double import TOKEN, HubDouble, talk_to
from helpers.paths import LOOP
from helpers.recipes import parse, recipe_module
from helpers.scripted import half_right
from helpers.tiny_run import tiny_run_settings

import seal_hub
from seal_hub.cli import main
from seal_hub.diagnosis import DEFAULT_RHO
from seal_hub.envs.protocol import ToolCall
from seal_hub.hub import (
    HubError,
    LocalRegistry,
    PublishConfig,
    Ref,
    RepoNotFoundError,
    RevisionNotFoundError,
    RunSources,
    attach_policy,
    check_base_model,
    derive_interface,
    publish_interface,
    publish_policy,
    resolve_reference,
    run_sources,
)
from seal_hub.hub.callback import PublishCallback
from seal_hub.hub.cards import card_metadata
from seal_hub.models.toolcalls import format_tool_calls
from seal_hub.rollout.records import read_trajectories

TASK = "multi_turn_base_1"
SRC_ENV, SRC_ADAPTER = "alice/src-env", "alice/src-adapter"


def publish_sources(registry, base: Path, root: Path) -> None:
    """alice's run: interface v0 (null), v1 (schema cues, hints, guidelines), v2 (v1 with another rho), and a
    LoRA adapter iter-1."""
    for snapshot in snapshots():
        publish_interface(SRC_ENV, snapshot, registry=registry)
    publish_policy(
        SRC_ADAPTER, 1, adapter(base, root / "src-adapter", seed=3), base_model=str(base), registry=registry
    )


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from seal_hub.models import build_tiny_model

    root = tmp_path_factory.mktemp("reuse-models")
    return {"base": build_tiny_model(root / "tiny"), "other": build_tiny_model(root / "other", seed=1), "root": root}


@pytest.fixture
def local(models, tmp_path, monkeypatch):
    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(tmp_path / "registry"))
    monkeypatch.setenv("SEAL_HUB_BACKEND", "local")
    registry = LocalRegistry()
    publish_sources(registry, models["base"], tmp_path)
    return registry


def commit_of(registry, repo_id: str, repo_type: str, revision: str) -> str:
    return registry.resolve(Ref(repo_id, repo_type, revision))


def card(registry, repo_id: str, repo_type: str, revision: str) -> str:
    return (registry.download(Ref(repo_id, repo_type, revision)) / "README.md").read_text(encoding="utf-8")


def recipe_flags(base: Path, out: Path, max_steps: int = 1) -> list[str]:
    return [
        "--model_name_or_path",
        str(base),
        "--output_dir",
        str(out),
        "--max_steps",
        str(max_steps),
        "--num_train_tasks",
        "1",
        "--max_new_tokens",
        "8",
        "--max_steps_per_turn",
        "1",
        "--interface",
        f"{SRC_ENV}@v1",
        "--init_adapter",
        f"{SRC_ADAPTER}@iter-1",
        "--env_adaptation",
        "false",
        "--publish_run",
        "bob/derived",
        "--publish_backend",
        "local",
    ]


def test_the_recipe_trains_one_step_from_a_published_interface_and_adapter(local, models, tmp_path, monkeypatch):
    require_bfcl()  # its suite is BFCL's
    out = tmp_path / "run"
    args = parse(LOOP, *recipe_flags(models["base"], out), monkeypatch=monkeypatch)
    assert args[2].lora_r == 8  # the adapter's own r=4 must win (args[2]: the model's arguments)
    recipe_module().main(*args)

    env_commit = commit_of(local, SRC_ENV, "dataset", "v1")
    adapter_commit = commit_of(local, SRC_ADAPTER, "model", "iter-1")
    recorded = RunSources.read(out)
    assert (recorded.environment.commit, recorded.adapter.commit) == (env_commit, adapter_commit)
    # env_adaptation false: the run trained on the source's v1 throughout, re-rooted in its own lineage
    assert [v.tag for v in local.versions("bob/derived-env", "dataset")] == ["v1"]
    ours, theirs = seal_hub.load_interface("bob/derived-env@v1"), seal_hub.load_interface(f"{SRC_ENV}@v1")
    assert ours.parent is None and ours.origin.commit == env_commit and ours.origin.content_hash == theirs.content_hash
    assert ours.system_prompt() == theirs.system_prompt() and ours.schema_cues == theirs.schema_cues
    metrics = json.loads((out / "iterations" / "step_000001" / "metrics.json").read_text())
    assert metrics["interface_version"] == "v1"
    # every card names both sources at their resolved commits
    for repo_id, kind, tag in (
        ("bob/derived-env", "dataset", "v1"),
        ("bob/derived-trajectories", "dataset", "iter-1"),
        ("bob/derived-adapter", "model", "iter-1"),
    ):
        text = card(local, repo_id, kind, tag)
        assert f"derived from {SRC_ENV}@v1 (commit {env_commit})" in text
        assert f"derived from {SRC_ADAPTER}@iter-1 (commit {adapter_commit})" in text
        derived = card_metadata(text)["seal"]["derived_from"]
        assert {(d["ref"], d["commit"]) for d in derived} == {
            (f"{SRC_ENV}@v1", env_commit),
            (f"{SRC_ADAPTER}@iter-1", adapter_commit),
        }
    # the policy started from the published adapter: its LoRA configuration, its weights (one small step away)
    published = local.download(Ref("bob/derived-adapter", "model", "iter-1"))
    assert json.loads((published / "adapter_config.json").read_text())["r"] == 4
    trained = lora_weights(seal_hub.load_adapter("bob/derived-adapter@iter-1"))
    source = lora_weights(seal_hub.load_adapter(f"{SRC_ADAPTER}@iter-1"))
    assert trained.keys() == source.keys()
    assert all(torch.allclose(trained[n], source[n], atol=1e-3) for n in source)  # not a fresh LoRA (B = 0)
    assert any(n.endswith("lora_B.default.weight") and source[n].abs().max() > 0.1 for n in source)


@pytest.mark.slow
def test_a_relaunched_recipe_resumes_on_the_recorded_sources(local, models, tmp_path, monkeypatch):
    out = tmp_path / "run"
    recipe = recipe_module()
    recipe.main(*parse(LOOP, *recipe_flags(models["base"], out), monkeypatch=monkeypatch))
    recorded = (out / "sources.json").read_text()
    recipe.main(*parse(LOOP, *recipe_flags(models["base"], out, max_steps=2), monkeypatch=monkeypatch))
    assert (out / "sources.json").read_text() == recorded
    assert [v.tag for v in local.versions("bob/derived-adapter", "model")] == ["iter-1", "iter-2"]
    assert (
        json.loads(
            (local.download(Ref("bob/derived-adapter", "model", "iter-2")) / "adapter_config.json").read_text()
        )["r"]
        == 4
    )
    other = [f"{SRC_ENV}@v0" if flag == f"{SRC_ENV}@v1" else flag for flag in recipe_flags(models["base"], out, 3)]
    with pytest.raises(ValueError, match=rf"started from {SRC_ENV}@v1 \(commit"):
        recipe.main(*parse(LOOP, *other, monkeypatch=monkeypatch))


def test_the_recipe_refuses_a_missing_version_in_one_line_before_loading_anything(local, models, tmp_path):
    require_bfcl()  # its suite is BFCL's
    import os
    import subprocess
    import sys

    flags = [f"{SRC_ENV}@v9" if flag == f"{SRC_ENV}@v1" else flag for flag in recipe_flags(models["base"], tmp_path)]
    env = os.environ | {"TRL_EXPERIMENTAL_SILENCE": "1"}
    done = subprocess.run(
        [sys.executable, str(Path(recipe_module().__file__)), "--config", str(LOOP), *flags],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("seal.py: error: ") and "versions: v0, v1, v2" in last and "Traceback" not in done.stderr
    assert not (tmp_path / "sources.json").exists()


def test_a_relaunch_reuses_the_recorded_commit_and_refuses_another_source(local, tmp_path):
    first, environment, _ = run_sources(tmp_path / "run", interface=f"{SRC_ENV}@main")
    assert first.environment.commit == commit_of(local, SRC_ENV, "dataset", "v2")
    v2 = snapshots()[2]
    changed = {"version": "v3", "parent": "v2", "train_only": False, "content_hash": ""}
    v3 = v2.model_validate(v2.model_dump() | changed)
    publish_interface(SRC_ENV, v3, registry=local)  # main moves on to v3
    again, environment_again, _ = run_sources(tmp_path / "run", interface=f"{SRC_ENV}@main")
    assert again == first and environment_again.value.content_hash == environment.value.content_hash
    with pytest.raises(ValueError, match=rf"started from {SRC_ENV}@main \(commit {first.environment.commit}\)"):
        run_sources(tmp_path / "run", interface=f"{SRC_ENV}@v0")
    (tmp_path / "fresh" / "checkpoint-3").mkdir(parents=True)
    with pytest.raises(ValueError, match="already has checkpoints and started without it"):
        run_sources(tmp_path / "fresh", adapter=f"{SRC_ADAPTER}@iter-1")


def test_missing_references_fail_at_once_naming_what_exists(local, models):
    with pytest.raises(RevisionNotFoundError, match=r"'v7'.*versions: v0, v1, v2"):
        resolve_reference(f"{SRC_ENV}@v7", "environment")
    with pytest.raises(RepoNotFoundError, match=r"alice/src-env \(v0, v1, v2\)"):
        resolve_reference("alice/no-such-env@v1", "environment")
    with pytest.raises(HubError, match="an adapter lives in a model repository, not a dataset one"):
        resolve_reference(f"datasets/{SRC_ENV}@v1", "adapter")
    resolved = resolve_reference(f"{SRC_ADAPTER}@iter-1", "adapter")
    check_base_model(resolved, str(models["base"]))
    with pytest.raises(ValueError) as error:
        check_base_model(resolved, str(models["other"]))
    message = str(error.value)
    assert "\n" not in message and str(models["base"].resolve()) in message and str(models["other"]) in message


def test_a_derived_snapshot_renders_as_its_source_and_names_its_origin(local, suite, tmp_path, capsys):
    import hashlib
    from dataclasses import replace

    from helpers.profiles import PROFILE

    from seal_hub.hub import Resolved
    from seal_hub.interface import diff, load_snapshot
    from seal_hub.interface.evolve import evolve

    resolved = resolve_reference(f"{SRC_ENV}@v1", "environment")
    source, derived = resolved.value, derive_interface(resolved)
    assert (derived.version, derived.parent, derived.origin.parent) == ("v1", None, "v0")
    assert derived.origin.commit == commit_of(local, SRC_ENV, "dataset", "v1")
    assert derived.origin.content_hash == source.content_hash != derived.content_hash
    tools = suite.episode(TASK).reset().tools
    assert derived.render_tools(tools) == source.render_tools(tools) != list(tools)
    assert derived.system_prompt() == source.system_prompt() and derived.recovery_feedback == source.recovery_feedback
    # the hash covers every field the file holds but the timestamp and itself, an unset origin included
    content = json.loads(source.save(tmp_path / "source.json").read_text(encoding="utf-8"))
    assert content["origin"] is None
    del content["created_at"], content["content_hash"]
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert source.content_hash == hashlib.sha256(canonical.encode()).hexdigest()
    path = derived.save(tmp_path / "v1.json")
    assert load_snapshot(path) == derived
    assert f"~ origin: none -> {SRC_ENV}@v1 (commit {derived.origin.commit})" in diff(source, derived)
    assert main(["interface", "show", str(path)]) == 0
    assert f"derived from {SRC_ENV}@v1 (commit {derived.origin.commit}), its version v1" in capsys.readouterr().out
    child = evolve(derived, PROFILE, rho={label: 1.25 for label in derived.rho})
    assert (child.version, child.parent, child.origin) == ("v2", "v1", None)
    renamed = source.model_validate(source.model_dump() | {"version": "exp-a", "content_hash": ""})
    with pytest.raises(ValueError, match="numbers its versions 'v<number>'"):
        derive_interface(Resolved(renamed, replace(resolved.source, revision="exp-a"), resolved.folder))


def test_cli_rollout_takes_a_published_interface_and_adapter(local, models, tmp_path, capsys):
    require_bfcl()  # its suite is BFCL's
    out = tmp_path / "rollout"
    argv = [
        "rollout",
        "--split",
        "train",
        "--limit",
        "1",
        "--max_new_tokens",
        "8",
        "--no_progress",
        "--output_dir",
        str(out),
    ]
    assert main([*argv, "--interface", f"{SRC_ENV}@v1", "--adapter", f"{SRC_ADAPTER}@iter-1"]) == 0
    env_commit = commit_of(local, SRC_ENV, "dataset", "v1")
    adapter_commit = commit_of(local, SRC_ADAPTER, "model", "iter-1")
    printed = capsys.readouterr().out
    assert f"environment: {SRC_ENV}@v1 (commit {env_commit})" in printed
    assert f"adapter: {SRC_ADAPTER}@iter-1 (commit {adapter_commit})" in printed
    (trajectory,) = read_trajectories(out / "trajectories.parquet")
    assert trajectory.interface_version == "v1"
    assert (trajectory.policy_id, trajectory.policy_revision) == (f"{SRC_ADAPTER}@iter-1", adapter_commit)
    assert RunSources.read(out).adapter.commit == adapter_commit
    assert main([*argv, "--interface", f"{SRC_ENV}@v9"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "versions: v0, v1, v2" in error
    assert main([*argv, "--adapter", f"{SRC_ADAPTER}@iter-1", "--model", str(models["other"])]) == 2
    assert "was trained on base model" in capsys.readouterr().err


def test_load_environment_plays_a_whole_episode_with_the_interface_applied(local, suite):
    env = seal_hub.load_environment(f"{SRC_ENV}@v1")
    assert env.source.commit == commit_of(local, SRC_ENV, "dataset", "v1")
    obs = env.reset(TASK)
    assert obs.messages[0]["role"] == "system" and "Guidelines:" in obs.messages[0]["content"]
    assert any("[required]" in json.dumps(tool) for tool in obs.tools)
    obs = env.step(format_tool_calls([ToolCall("no_such_tool", {})], "hermes"))
    assert not obs.done and "Hint:" in obs.new_messages[0]["content"]
    for calls in suite.task(TASK).ground_truth:
        if calls:
            obs = env.step(format_tool_calls(calls, "hermes"))
        obs = env.step("Done.")
    assert obs.done and obs.reward == 1.0 and env.verdict.passed
    plain = seal_hub.load_environment(f"{SRC_ENV}@v1", training=False).reset(TASK)  # train-only: BFCL's protocol
    assert plain.messages[0]["role"] == "user" and not any("[required]" in json.dumps(t) for t in plain.tools)


# ----- on the loopback Hub double: evolve from a published version; load_environment renders what was trained


@pytest.mark.hub
def test_training_evolves_from_a_hub_version_and_load_environment_renders_the_same_tokens(
    models, suite, tmp_path, monkeypatch
):
    from seal_hub.hub.hf import HubRegistry
    from seal_hub.models import PolicyConfig, load_policy
    from seal_hub.training import SealConfig, SealTrainer

    with HubDouble(token=TOKEN) as double:
        talk_to(monkeypatch, double, tmp_path)
        hub = HubRegistry()
        publish_sources(hub, models["base"], tmp_path)
        out = tmp_path / "run"
        sources, environment, published = run_sources(
            out, interface=f"hf://{SRC_ENV}@v2", adapter=f"hf://{SRC_ADAPTER}@iter-1"
        )
        assert sources.environment.commit == double.resolve(double.repo("dataset", SRC_ENV), "v2").oid
        check_base_model(published, str(models["base"]))
        model, tokenizer = load_policy(PolicyConfig(model_name_or_path=str(models["base"])))
        model = attach_policy(model, published, trainable=True)
        # one step of one task x 2 rollouts
        settings = tiny_run_settings(
            tmp_path, output_dir=str(out), per_device_train_batch_size=2, max_steps=1, learning_rate=1e-3
        )
        publisher = PublishCallback(PublishConfig(run="bob/evolved", backend="hub", base_model=str(models["base"])))
        trainer = SealTrainer(
            model,
            args=SealConfig(**settings),
            processing_class=tokenizer,
            callbacks=[publisher],
            suite=suite,
            train_tasks=suite.select([TASK]),
            interface=derive_interface(environment),
            policy_id="tiny",
            backend_factory=half_right(suite, opening=[format_tool_calls([ToolCall("no_such_tool", {})], "hermes")]),
        )
        assert trainer.window.rho == environment.value.rho != DEFAULT_RHO  # the loop continues from the source's rho
        trainer.train()

        # numbering continues from the source: v2 (re-rooted, origin recorded) -> v3 (this run's evolution)
        assert trainer.store.versions() == ["v2", "v3"] and trainer.store.get("v3").parent == "v2"
        assert trainer.store.get("v2").origin.commit == sources.environment.commit
        assert [v.tag for v in hub.versions("bob/evolved-env", "dataset")] == ["v2"]  # iteration 1 trained on v2
        env_card = double.files_at("dataset", "bob/evolved-env", "v2")["README.md"].decode()
        assert f"lineage: {sources.environment.describe()} ⇒ v2" in env_card
        assert f"derived from {SRC_ADAPTER}@iter-1 (commit {sources.adapter.commit})" in env_card
        adapter_card = double.files_at("model", "bob/evolved-adapter", "iter-1")["README.md"].decode()
        assert sources.adapter.url in adapter_card and sources.environment.url in adapter_card

        # the published version renders exactly what the trainer rendered: same prompt tokens, same messages
        (trained, *_) = read_trajectories(out / "iterations" / "step_000001" / "trajectories.parquet")
        assert trained.rollout_index == 0 and trained.interface_version == "v2"
        for ref in ("hf://bob/evolved-env@v2", f"hf://{SRC_ENV}@v2"):
            env = seal_hub.load_environment(ref, tokenizer=tokenizer)
            obs = env.reset(TASK)
            text = tokenizer.apply_chat_template(
                obs.messages, tools=obs.tools, add_generation_prompt=True, tokenize=False
            )
            assert tokenizer(text, add_special_tokens=False)["input_ids"] == trained.token_ids[: trained.prompt_length]
            for step in (s for turn in trained.turns for s in turn.steps):
                obs = env.step(step.text)
            assert obs.done and obs.reward == trained.reward == 1.0
            assert [(m["role"], m["content"] or "") for m in obs.messages] == [
                (m.role, m.content) for m in trained.messages
            ]
            assert any("Hint:" in m["content"] for m in obs.messages if m["role"] == "tool")
