"""The held-out comparison as one object (`HeldOutComparison`): built from the run's chosen tasks and config, it
evaluates the base model and the warmed-up one on the main process only, each stage into its own folder with the
record `seal-hub eval` writes, and its final stage ends the summary with the contract lines."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from helpers.user_env import PANTRY, PANTRY_ROWS, write_jsonl

import seal_hub.training.comparison as comparison_module
from seal_hub.evaluation.scores import CategoryScore, Scores
from seal_hub.generation.weights import GenerationWeights
from seal_hub.training import SealConfig
from seal_hub.training.comparison import HeldOutComparison, stage_dir
from seal_hub.training.selection import TaskArguments, select_tasks


@pytest.fixture
def chosen(tmp_path):
    data = write_jsonl(tmp_path / "pantry.jsonl", PANTRY_ROWS)
    config = SealConfig(
        output_dir=str(tmp_path / "run"),
        use_cpu=True,
        per_device_train_batch_size=2,
        num_generations=2,
        eval_tasks=2,
        eval_max_new_tokens=24,
        merge_lora_for_generation=False,
        report_to=[],
    )
    task_args = TaskArguments(environment=PANTRY, dataset=str(data), eval_fraction=0.4)
    return select_tasks(task_args, config, held_out=True), config


def recorded(monkeypatch, average: float = 50.0):
    calls = []

    def evaluate_stage(plan, model, tokenizer, out, model_record, adapter_record=None, weights=None):
        calls.append((out, model_record, adapter_record, weights))
        per = {"stock": CategoryScore(int(average), 100)}
        return SimpleNamespace(scores=Scores(per))

    monkeypatch.setattr(comparison_module, "evaluate_stage", evaluate_stage)
    return calls


def test_the_plan_is_the_chosen_held_out_tasks_under_the_runs_protocol(chosen):
    selection, config = chosen
    comparison = HeldOutComparison.of(selection, config, {"id": "tiny", "revision": None}, main_process=True)
    assert comparison.plan.tasks == selection.held_out and len(comparison.plan.tasks) == 2
    assert comparison.plan.protocol.max_new_tokens == 24  # eval_max_new_tokens, not the training reply budget
    assert comparison.plan.split_source == "default" and comparison.output_dir == config.output_dir
    assert "--limit 2" in comparison.plan.eval_flags() and "--max_new_tokens 24" in comparison.plan.eval_flags()


def test_base_and_warm_up_stages_go_to_their_folders_on_the_main_process_only(chosen, monkeypatch):
    selection, config = chosen
    calls = recorded(monkeypatch)
    base = {"id": "tiny", "revision": "abc"}
    other = HeldOutComparison.of(selection, config, base, main_process=False)
    other.base(None, None)
    other.warmup(None, None, 7)
    assert calls == []  # another rank: nothing evaluated, nothing written
    comparison = HeldOutComparison.of(selection, config, base, main_process=True)
    comparison.base(None, None)
    comparison.warmup(None, None, 7)
    assert [c[0] for c in calls] == [stage_dir(config.output_dir, "base"), stage_dir(config.output_dir, "warmup")]
    assert calls[0][1] == base and calls[0][2] is None
    assert calls[0][3] == GenerationWeights(merge_lora=False, dtype="auto")  # as the run's rollouts take them
    assert calls[1][1] == {"id": "tiny + SFT warm-up (7 steps)", "revision": "abc"}  # named as the warmed-up model


def test_the_final_stage_ends_with_the_contract_lines(chosen, monkeypatch):
    selection, config = chosen
    recorded(monkeypatch, average=75.0)
    comparison = HeldOutComparison.of(selection, config, {"id": "tiny", "revision": None}, main_process=True)
    for stage, passed in (("base", 25), ("warmup", 50)):  # earlier stages, as their results.json left them
        folder = stage_dir(config.output_dir, stage)
        folder.mkdir(parents=True)
        scores = Scores({"stock": CategoryScore(passed, 100)})
        (folder / "results.json").write_text(json.dumps({"scores": scores.as_dict()}))
    trainer = SimpleNamespace(state=SimpleNamespace(global_step=0), publish=None, model=None)
    lines = comparison.final(trainer, None)
    assert lines[-2] == f"held-out after warm-up: 50.0% on 2 tasks ({PANTRY})"
    assert lines[-1] == f"held-out success: 25.0% -> 75.0% on 2 tasks ({PANTRY})"
    assert "held-out learning curve: base 25.0% -> warm-up 50.0% -> final 75.0%" in lines
