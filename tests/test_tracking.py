"""Experiment tracking and held-out evaluation during training: `report_to: trackio` logs SEAL's own metrics
(success, mean weight, rho and prevalence of every label, environment version) and the periodic held-out
evaluation (`eval/success_rate`, per category), all read back from trackio's local store and checked against
the run's own records on disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from seal_hub.diagnosis import Label
from seal_hub.training.held_out import held_out_tasks

ROOT = Path(__file__).resolve().parents[1]
PROJECT, RUN = "seal-hub-test", "tiny-trackio"

# Trains in a child process: trackio fixes its directory (TRACKIO_DIR) when first imported, and TRL imports it
# with the trainer, so only a fresh process can be pointed at a temporary store.
TRAIN = """
import sys
from pathlib import Path
from seal_hub.envs.bfcl import BfclSuite, stratified_split
from seal_hub.training.held_out import held_out_tasks
from seal_hub.models import build_tiny_model, load_policy, lora_config
from seal_hub.training import SealConfig, SealTrainer
from helpers.scripted import half_right
from helpers.tiny_run import TASKS, tiny_policy

root = Path(sys.argv[1])
suite = BfclSuite()
policy = tiny_policy(build_tiny_model(root / "tiny"))
model, tokenizer = load_policy(policy)
config = SealConfig(
    output_dir=str(root / "run"), per_device_train_batch_size=4, num_generations=2, max_steps=2,
    learning_rate=5e-2, logging_steps=1, save_strategy="no", beta=0.0, use_cpu=True, seed=0,
    max_new_tokens=2048, max_completion_length=8192, max_context_tokens=16384, disable_tqdm=True,
    report_to=["trackio"], project=sys.argv[2], run_name=sys.argv[3], eval_every_steps=1, eval_tasks=4,
)
held_out = held_out_tasks(suite, stratified_split(suite.tasks, seed=0).test, config.eval_tasks)
trainer = SealTrainer(
    model, args=config, processing_class=tokenizer, peft_config=lora_config(policy), suite=suite,
    train_tasks=suite.select(TASKS), policy_id="tiny", backend_factory=half_right(suite), held_out_tasks=held_out,
)
trainer.train()
"""


@pytest.fixture(scope="module")
def tracked_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("tracked")
    env = dict(os.environ, TRACKIO_DIR=str(root / "trackio"), HF_HUB_OFFLINE="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests"), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", TRAIN, str(root), PROJECT, RUN],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return root


def trackio_logs(root: Path, monkeypatch) -> list[dict]:
    from trackio import sqlite_storage

    monkeypatch.setattr(sqlite_storage, "TRACKIO_DIR", root / "trackio")
    assert sqlite_storage.SQLiteStorage.get_runs(PROJECT) == [RUN]
    return sqlite_storage.SQLiteStorage.get_logs(PROJECT, RUN)


@pytest.mark.slow  # a subprocess training (the default suite keeps one: test_first_run's)
def test_trackio_holds_every_seal_metric_of_every_step(tracked_run, monkeypatch):
    logs = trackio_logs(tracked_run, monkeypatch)
    train = [entry for entry in logs if "train/seal/success_rate" in entry]
    assert [int(entry["train/global_step"]) for entry in train] == [1, 2]
    for entry in train:
        step = int(entry["train/global_step"])
        metrics = json.loads((tracked_run / "run" / "iterations" / f"step_{step:06d}" / "metrics.json").read_text())
        assert entry["train/seal/success_rate"] == pytest.approx(metrics["success_rate"])
        assert entry["train/seal/mean_weight"] == pytest.approx(metrics["mean_weight"])
        assert entry["train/seal/interface_version"] == int(metrics["interface_version"].lstrip("v"))
        profile = metrics["label_profile"]["labels"]
        for label in Label:
            assert entry[f"train/seal/rho/{label}"] == pytest.approx(metrics["rho"][str(label)]), label
            expected = profile.get(str(label), {"prevalence": 0.0})["prevalence"]
            assert entry[f"train/seal/prevalence/{label}"] == pytest.approx(expected), label
    assert {entry["train/seal/success_rate"] for entry in train} == {0.5}  # half the rollouts replay the truth


@pytest.mark.slow  # a subprocess training (the default suite keeps one: test_first_run's)
def test_held_out_evaluation_is_logged_per_category_and_written_to_the_run(tracked_run, monkeypatch):
    logs = trackio_logs(tracked_run, monkeypatch)
    evals = [entry for entry in logs if "eval/success_rate" in entry]
    assert [int(entry["train/global_step"]) for entry in evals] == [1, 2]
    for entry in evals:
        step = int(entry["train/global_step"])
        record = json.loads((tracked_run / "run" / "held_out" / f"step_{step:06d}.json").read_text())
        assert record["num_tasks"] == entry["eval/num_tasks"] == 4
        assert record["protocol"]["temperature"] == 0.0 and record["protocol"]["interface"].startswith("v0")
        assert entry["eval/success_rate"] == pytest.approx(record["success_rate"])
        assert set(record["per_category"]) == {"base", "miss_func", "miss_param", "long_context"}
        for category, counts in record["per_category"].items():
            assert entry[f"eval/success_rate/{category}"] == pytest.approx(counts["passed"] / counts["total"])
    # the scripted policy answers greedy episodes with the ground truth, so the held-out tasks pass
    assert record["success_rate"] > 0


def test_held_out_tasks_take_the_categories_in_turn(suite):
    from seal_hub.envs.bfcl import stratified_split

    test_ids = stratified_split(suite.tasks, seed=0).test
    tasks = held_out_tasks(suite, test_ids, 6)
    assert len({t.category for t in tasks[:4]}) == 4 and len(tasks) == 6
    assert all(t.id in set(test_ids) for t in tasks)
    with pytest.raises(ValueError, match="eval_tasks"):
        held_out_tasks(suite, test_ids, 0)


def test_eval_settings_are_checked(tmp_path):
    from seal_hub.training import SealConfig

    with pytest.raises(ValueError, match="eval_every_steps"):
        SealConfig(output_dir=str(tmp_path), use_cpu=True, eval_every_steps=-1, num_generations=2)
    with pytest.raises(ValueError, match="eval_tasks"):
        SealConfig(output_dir=str(tmp_path), use_cpu=True, eval_tasks=0, num_generations=2)


def test_held_out_evaluation_scores_with_the_eval_commands_protocol(suite, monkeypatch, tmp_path):
    """One protocol from the config: the held-out rollouts get `seal-hub eval`'s tokens per step and step limit
    (BFCL's 20 per turn), whatever the training reply budget and `max_steps_per_turn`; the trainer's periodic
    evaluation and the held-out comparison both take it from `held_out_protocol`."""
    from seal_hub.evaluation import EvalProtocol, OracleRunner, harness
    from seal_hub.rollout import PolicyInfo
    from seal_hub.training import SealConfig, held_out

    seen = {}

    class Engine:  # plays the reference answers under the episode settings it was given
        def __init__(self, backend, tokenizer, suite, config, policy, interface):
            seen["config"], seen["interface"] = config, interface
            self.policy, self.oracle = policy, OracleRunner(suite, config.episode)

        def run(self, tasks, progress=False, on_trajectory=None):
            self.oracle.run(tasks, on_trajectory)

    monkeypatch.setattr(harness, "RolloutEngine", Engine)
    monkeypatch.setattr(harness, "resolve_parser_style", lambda tokenizer, style: style or "hermes")
    config = SealConfig(
        output_dir=str(tmp_path), use_cpu=True, num_generations=2, max_steps_per_turn=1, max_live_episodes=3
    )
    protocol = held_out.held_out_protocol(config)
    assert protocol == EvalProtocol(max_live_episodes=3) and protocol.max_steps_per_turn == 20
    tasks = suite.select(["multi_turn_base_0", "multi_turn_miss_func_0"])
    result = held_out.evaluate_held_out(None, None, suite, tasks, protocol, PolicyInfo("p"), step=1)
    assert result.per_category == {"base": (1, 1), "miss_func": (1, 1)} and result.task_ids == tuple(
        t.id for t in tasks
    )
    assert result.protocol == EvalProtocol(max_live_episodes=3, parser_style="hermes")
    assert seen["config"].sampling.max_new_tokens == EvalProtocol().max_new_tokens == 512
    assert seen["config"].episode.max_steps_per_turn == 20
    assert seen["config"].parser_style == "hermes"  # resolved from the chat template, as results.json names it
    assert seen["config"].sampling.temperature == 0.0 and seen["interface"].is_null
