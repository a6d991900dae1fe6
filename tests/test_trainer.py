"""SEAL on TRL with the tiny model: parameters move, advantages are reweighted by the formula, switches work,
and a run resumes from its last checkpoint without losing or duplicating anything."""

from __future__ import annotations

import json

import pytest
import torch
from helpers.scripted import ScriptedBackend, outcome_backend
from helpers.tiny_run import TASKS, make_trainer, tiny_policy

from seal_hub.diagnosis import DEFAULT_RHO, Label, RolloutDiagnosis
from seal_hub.interface.evolve import SCHEMA_NOTE
from seal_hub.rollout.records import read_trajectories
from seal_hub.training.run_records import load_state


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from seal_hub.models import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny"))


def test_two_training_steps_change_the_lora_parameters(suite, tiny_dir, tmp_path):
    trainer = make_trainer(suite, tiny_dir, tmp_path)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
    assert before and all("lora_" in n for n in before)
    trainer.train()
    after = dict(trainer.model.named_parameters())
    changed = [n for n in before if not torch.equal(before[n], after[n].detach())]
    assert len(changed) == len(before)
    folders = sorted(p.name for p in (tmp_path / "run" / "iterations").iterdir())
    assert folders == ["step_000001", "step_000002"]
    metrics = json.loads((tmp_path / "run" / "iterations" / "step_000001" / "metrics.json").read_text())
    assert metrics["success_rate"] == 0.5 and metrics["rollouts"] == 4 and metrics["interface_version"] == "v0"
    trajectories = read_trajectories(tmp_path / "run" / "iterations" / "step_000002" / "trajectories.parquet")
    assert [t.reward for t in trajectories] == [1.0, 0.0, 1.0, 0.0]


def test_advantages_are_multiplied_by_the_rollout_weight(suite, tiny_dir, tmp_path):
    inputs = [{"prompt": task_id} for task_id in TASKS for _ in range(2)]
    results = {}
    for name, reweighting in (("seal", True), ("plain", False)):
        trainer = make_trainer(
            suite, tiny_dir, tmp_path / name, reweighting=reweighting, env_adaptation=False, closed_loop=False
        )
        trainer.model.train()
        output = trainer._generate_and_score_completions([dict(i) for i in inputs])
        results[name] = output["advantages"]
    # GRPO: per task, rewards (1, 0) -> advantages (+a, -a); then w_j from the labels, with the default rho
    plain = results["plain"]
    assert plain[0] > 0 > plain[1] and plain[2] > 0 > plain[3]
    weights = []
    for task_id in TASKS:  # every turn of these tasks calls tools: pass when right, missing when "Done."
        turns = suite.task(task_id).num_turns
        assert all(suite.task(task_id).ground_truth)
        good = RolloutDiagnosis(task_id, 1.0, tuple([Label.PASS] * turns)).weight()
        bad = RolloutDiagnosis(task_id, 0.0, tuple([Label.MISSING_TOOL_CALL] * turns)).weight()
        weights += [good, bad]
    assert weights[1] == DEFAULT_RHO[Label.MISSING_TOOL_CALL] == 1.5 and weights[0] == 1.0
    assert torch.allclose(results["seal"], plain * torch.tensor(weights), atol=1e-6)


@pytest.mark.parametrize(
    ("switches", "interface_moves", "rho_moves", "weights_apply"),
    [
        ({}, True, True, True),
        ({"env_adaptation": False}, False, True, True),
        ({"closed_loop": False}, True, False, True),
        ({"reweighting": False}, True, True, False),
        ({"env_adaptation": False, "closed_loop": False, "reweighting": False}, False, False, False),
    ],
    ids=["seal", "no_env_adaptation", "no_closed_loop", "no_reweighting", "vanilla"],
)
def test_ablation_switches(suite, tiny_dir, tmp_path, switches, interface_moves, rho_moves, weights_apply):
    always_wrong = lambda model, tokenizer, step: ScriptedBackend(tokenizer, lambda *_: "Done.")  # noqa: E731
    trainer = make_trainer(suite, tiny_dir, tmp_path, backend=always_wrong, max_steps=1, **switches)
    trainer._rollout([t for t in TASKS for _ in range(2)], trainer)
    assert (trainer.interface.version != "v0") == interface_moves
    assert (trainer.window.rho[Label.MISSING_TOOL_CALL] != 1.5) == rho_moves
    # the batch is weighted with the rho that already observed it (the released order)
    expected = trainer.window.rho[Label.MISSING_TOOL_CALL] if weights_apply else 1.0
    assert all(w == expected for w in trainer._weights)


def test_resume_after_a_kill_loses_and_duplicates_nothing(suite, tiny_dir, tmp_path):
    import shutil

    run = tmp_path / "run"
    make_trainer(suite, tiny_dir, tmp_path, max_steps=2).train()
    # a kill during step 2 after its rollouts were written but before its checkpoint: drop checkpoint-2
    shutil.rmtree(run / "checkpoint-2")
    versions_at_1 = load_state(run / "checkpoint-1")["interface_versions"]
    (run / "interfaces" / "v9.json").write_text("{}")  # a version made after checkpoint-1 must not survive
    resumed = make_trainer(suite, tiny_dir, tmp_path, max_steps=3)
    resumed.train(resume_from_checkpoint=True)
    folders = sorted(p.name for p in (run / "iterations").iterdir())
    assert folders == ["step_000001", "step_000002", "step_000003"]
    for folder in folders:
        trajectories = read_trajectories(run / "iterations" / folder / "trajectories.parquet")
        assert len(trajectories) == 4  # one batch each: nothing duplicated
    versions = sorted(p.stem for p in (run / "interfaces").glob("*.json"))
    assert "v9" not in versions and set(versions_at_1) <= set(versions)
    numbers = sorted(int(v[1:]) for v in versions)
    assert numbers == list(range(len(numbers)))  # no version skipped
    assert resumed.state.global_step == 3


def task_ids(run) -> list[list[str]]:
    """Each iteration's rollouts' task ids, in the order of its records."""
    folders = sorted((run / "iterations").iterdir())
    return [[t.task_id for t in read_trajectories(f / "trajectories.parquet")] for f in folders]


def test_a_resume_trains_on_the_tasks_an_uninterrupted_run_trains_on(suite, tiny_dir, tmp_path):
    """2 tasks, one a step (2 rollouts): an epoch is 2 steps. Resumed at the epoch boundary (checkpoint 2) and
    inside epoch 1 (checkpoint 3), the run draws each step's task as the uninterrupted run did: the sampler's
    permutation is a function of (seed, epoch), not of how many epochs this process has iterated."""
    import shutil

    run = tmp_path / "run"
    four_steps = lambda: make_trainer(suite, tiny_dir, tmp_path, max_steps=4, per_device_train_batch_size=2)  # noqa: E731
    four_steps().train()
    straight = task_ids(run)
    assert all(len(set(step)) == 1 for step in straight)  # one task a step, its 2 rollouts
    assert {straight[0][0], straight[1][0]} == {straight[2][0], straight[3][0]} == set(TASKS)  # each epoch: both
    assert straight[:2] != straight[2:]  # seed 0 orders epoch 1 unlike epoch 0, or this test would prove nothing
    for kept in (2, 3):  # a kill after checkpoint `kept`: the later checkpoints are lost
        for step in range(kept + 1, 5):
            shutil.rmtree(run / f"checkpoint-{step}")
        four_steps().train(resume_from_checkpoint=True)
        assert task_ids(run) == straight, f"resumed from checkpoint-{kept}"


def test_checkpointed_iterations_are_published_with_their_three_artifacts(suite, tiny_dir, tmp_path, monkeypatch):
    from seal_hub.hub import PublishConfig, get_registry
    from seal_hub.hub.callback import PublishCallback

    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(tmp_path / "registry"))
    publish = PublishConfig(run="demo/tiny-run", backend="local", base_model="org/tiny-base")
    trainer = make_trainer(suite, tiny_dir, tmp_path, callbacks=[PublishCallback(publish)])
    trainer.train()
    registry = get_registry("local")
    tags = lambda repo, kind: [v.tag for v in registry.versions(repo, kind)]  # noqa: E731
    assert tags("demo/tiny-run-adapter", "model") == ["iter-1", "iter-2"]
    assert tags("demo/tiny-run-trajectories", "dataset") == ["iter-1", "iter-2"]
    environment = tags("demo/tiny-run-env", "dataset")
    assert environment[0] == "v0" and set(environment) <= set(trainer.store.versions())
    # each version an iteration trained against records what the task sampler was drawing then
    from seal_hub.hub.registry import Ref

    first = registry.download(Ref("demo/tiny-run-env", "dataset", environment[0]))
    teaching = json.loads((first / "task_sampler.json").read_text())
    assert teaching["kind"] == "uniform" and sum(c["tasks"] for c in teaching["categories"].values()) == 2
    assert "## What it was teaching" in (first / "README.md").read_text()
    assert trainer.publish_pending() == []  # nothing left to publish: repeating is a no-op


def test_sft_warmup_conversations_and_steps(suite, tiny_dir, tmp_path):
    from peft import get_peft_model

    from seal_hub.envs.reference import ABSTAIN, CLOSING
    from seal_hub.models import load_policy, lora_config
    from seal_hub.training.warmup import run_warmup, warmup_conversations, warmup_dataset

    tasks = suite.select(["multi_turn_base_1", "multi_turn_miss_param_0"])
    conversations = warmup_conversations(suite, tasks)
    first = conversations[0]["messages"]
    task = suite.task("multi_turn_base_1")
    calls = [m for m in first if m["role"] == "assistant" and m.get("tool_calls")]
    assert [[c["function"]["name"] for c in m["tool_calls"]] for m in calls] == [
        [c.name for c in turn] for turn in task.ground_truth
    ]
    tool_outputs = [m["content"] for m in first if m["role"] == "tool"]
    assert tool_outputs == list(o for turn in suite.ground_truth(task).turns for o in turn.outputs)
    assert [m["content"] for m in first if m["role"] == "assistant" and not m.get("tool_calls")] == [
        CLOSING
    ] * task.num_turns
    assert all(isinstance(c["function"]["arguments"], dict) for m in calls for c in m["tool_calls"])  # as rollouts
    abstaining = suite.task("multi_turn_miss_param_0")
    second = conversations[1]["messages"]
    replies = [m["content"] for m in second if m["role"] == "assistant" and not m.get("tool_calls")]
    assert replies == [CLOSING if calls else ABSTAIN for calls in abstaining.ground_truth]

    policy = tiny_policy(tiny_dir)
    model, tokenizer = load_policy(policy)
    dataset = warmup_dataset(suite, tasks, tokenizer)
    row = dataset[0]
    taught = tokenizer.decode([i for i, label in zip(row["input_ids"], row["labels"], strict=True) if label != -100])
    assert taught.count("<tool_call>") == sum(len(turn) for turn in task.ground_truth)  # the calls are the loss
    assert '"arguments": {' in taught and '"arguments": "' not in taught  # objects, not JSON text in a string
    model = get_peft_model(model, lora_config(policy))
    before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    run_warmup(
        model,
        tokenizer,
        dataset,
        steps=2,
        output_dir=str(tmp_path / "sft"),
        learning_rate=1e-2,
        use_cpu=True,
        per_device_train_batch_size=1,
        max_length=8192,
        disable_tqdm=True,
    )
    assert all(not torch.equal(before[n], p.detach()) for n, p in model.named_parameters() if n in before)


def test_a_frozen_context_warm_up_has_the_same_loss_and_trains_the_lora_weights(suite, tiny_dir, tmp_path):
    """The frozen-context loss of a multi-turn conversation is TRL's loss (same logits), its gradient reaches the
    LoRA weights, and a warm-up with it moves every LoRA weight."""
    from peft import get_peft_model
    from trl import SFTConfig

    from seal_hub.models import load_policy, lora_config
    from seal_hub.training.frozen_context import FrozenContextSFTTrainer
    from seal_hub.training.warmup import run_warmup, warmup_dataset

    policy = tiny_policy(tiny_dir)
    model, tokenizer = load_policy(policy)
    dataset = warmup_dataset(suite, suite.select(["multi_turn_base_1"]), tokenizer)
    model = get_peft_model(model, lora_config(policy))
    ids, labels = torch.tensor([dataset[0]["input_ids"]]), torch.tensor([dataset[0]["labels"]])
    config = SFTConfig(output_dir=str(tmp_path / "x"), use_cpu=True, report_to=[], max_length=8192)
    trainer = FrozenContextSFTTrainer(model=model, args=config, train_dataset=dataset, processing_class=tokenizer)
    frozen = trainer.compute_loss(model, {"input_ids": ids, "labels": labels})
    full = model(input_ids=ids, labels=labels).loss
    assert torch.isclose(frozen, full, rtol=1e-4), (float(frozen), float(full))
    frozen.backward()
    assert all(p.grad is not None for n, p in model.named_parameters() if p.requires_grad)
    with pytest.raises(ValueError, match="one conversation per forward"):
        trainer.compute_loss(model, {"input_ids": ids.repeat(2, 1), "labels": labels.repeat(2, 1)})
    before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    run_warmup(
        model,
        tokenizer,
        dataset,
        steps=2,
        output_dir=str(tmp_path / "sft"),
        learning_rate=1e-2,
        frozen_context=True,
        use_cpu=True,
        per_device_train_batch_size=1,
        max_length=8192,
        disable_tqdm=True,
    )
    assert all(not torch.equal(before[n], p.detach()) for n, p in model.named_parameters() if n in before)


def test_the_closed_loop_window_resets_each_epoch_but_not_on_resume(suite, tiny_dir, tmp_path):
    from transformers import TrainerState

    trainer = make_trainer(suite, tiny_dir, tmp_path, max_steps=1)
    callback = next(c for c in trainer.callback_handler.callbacks if type(c).__name__ == "_EpochWindow")
    trainer.window.add([RolloutDiagnosis("t", 0.0, (Label.MISSING_TOOL_CALL,))])
    callback.on_epoch_begin(trainer.args, TrainerState(epoch=0.5), None)  # a resume inside epoch 0
    assert len(trainer.window.diagnoses) == 1
    callback.on_epoch_begin(trainer.args, TrainerState(epoch=1.0), None)  # epoch 1 begins
    assert trainer.window.diagnoses == [] and trainer.window_epoch == 1


def test_trained_completions_stop_at_max_completion_length(suite, tiny_dir, tmp_path):
    trainer = make_trainer(suite, tiny_dir, tmp_path, max_completion_length=24, max_steps=1)
    output = trainer._rollout([t for t in TASKS for _ in range(2)], trainer)
    trajectories = read_trajectories(tmp_path / "run" / "iterations" / "step_000001" / "trajectories.parquet")
    assert all(len(t.token_ids) - t.prompt_length > 24 for t in trajectories)  # every episode is longer
    for key in ("completion_ids", "logprobs", "env_mask"):
        assert [len(x) for x in output[key]] == [24] * 4, key
    for t, ids, mask in zip(trajectories, output["completion_ids"], output["env_mask"], strict=True):
        assert ids == t.token_ids[t.prompt_length :][:24] and mask == t.token_mask[t.prompt_length :][:24]
    assert output["seal_reward"] == [t.reward for t in trajectories] and 1.0 in output["seal_reward"]


def test_the_released_interface_mode_trains_with_schema_cues_from_step_0_and_nothing_else(suite, tiny_dir, tmp_path):
    always_wrong = lambda model, tokenizer, step: ScriptedBackend(tokenizer, lambda *_: "Done.")  # noqa: E731
    trainer = make_trainer(suite, tiny_dir, tmp_path, backend=always_wrong, max_steps=1, interface_mode="released")
    v0 = trainer.interface
    assert v0.version == "v0" and v0.schema_cues.enabled and trainer.store.get("v0") == v0
    trainer._rollout([t for t in TASKS for _ in range(2)], trainer)
    trajectories = read_trajectories(tmp_path / "run" / "iterations" / "step_000001" / "trajectories.parquet")
    assert all(t.interface_version == "v0" for t in trajectories)
    assert all(SCHEMA_NOTE in t.messages[0].content for t in trajectories)  # the cues reached the first rollouts
    now = trainer.interface  # rho moved and is recorded; no hints, no guidelines
    assert now.schema_cues == v0.schema_cues
    assert not now.recovery_feedback.enabled and not now.capability_guidelines.enabled


def same(state: dict, other: dict) -> bool:
    """Loop states equal but for when the interface was made (step 2's version is evolved again on a resume)."""
    strip = lambda s: s | {"interface": {k: v for k, v in s["interface"].items() if k != "created_at"}}  # noqa: E731
    return strip(state) == strip(other)


def test_a_resume_restores_the_loop_state_through_transformers_stateful_callbacks(suite, tiny_dir, tmp_path):
    import shutil

    always_wrong = lambda model, tokenizer, step: ScriptedBackend(tokenizer, lambda *_: "Done.")  # noqa: E731
    run = tmp_path / "run"
    two_steps = lambda: make_trainer(  # noqa: E731
        suite, tiny_dir, tmp_path, backend=always_wrong, max_steps=2, per_device_train_batch_size=2
    )
    straight = two_steps()
    assert straight.synced is None  # one process: generation keeps no ranks in step and pays nothing for it
    straight.train()
    at_2 = straight.seal_state()
    at_1 = load_state(run / "checkpoint-1")  # in trainer_state.json, under stateful_callbacks["SealLoopState"]
    assert at_1["generations"] == 1 and at_2["generations"] == 2
    assert at_1["rho"] != at_2["rho"] and at_1["interface"] != at_2["interface"]  # the loop moved in step 2
    shutil.rmtree(run / "checkpoint-2")
    resumed = two_steps()
    assert resumed.seal_state() != at_1  # a fresh trainer starts from the starting interface and rho
    resumed.train(resume_from_checkpoint=True)
    assert same(resumed.seal_state(), at_2)  # restored at step 1, then the same step 2
    assert same(load_state(run / "checkpoint-2"), at_2)
    relaunched = two_steps()
    relaunched.train(resume_from_checkpoint=True)  # already complete: no loop runs, the state is still restored
    assert relaunched.completed_at == 2 and same(relaunched.seal_state(), at_2)


def test_seal_config_refuses_to_resume_without_callback_states(tmp_path):
    from seal_hub.training import SealConfig

    with pytest.raises(ValueError, match="restore_callback_states_from_checkpoint=False.*leave it True"):
        SealConfig(
            output_dir=str(tmp_path), use_cpu=True, num_generations=2, restore_callback_states_from_checkpoint=False
        )


MIXED = {
    "multi_turn_base_0": "pass",
    "multi_turn_base_1": "fail",
    "multi_turn_base_2": "half",
    "multi_turn_base_3": "fail",
    "multi_turn_base_4": "half",
    "multi_turn_base_5": "pass",
}


def mixed_trainer(suite, tiny_dir, tmp_path, **overrides):
    return make_trainer(suite, tiny_dir, tmp_path, outcome_backend(suite, MIXED), tasks=list(MIXED), **overrides)


def recorded_step(trainer) -> dict:
    """Train `trainer` (one step) recording what its rollout_func returned and what TRL scored from it."""
    seen = {}
    rollout, score = trainer.rollout_func, trainer._generate_and_score_completions

    def recording_rollout(prompts, _trainer):
        seen["rollout"] = rollout(prompts, _trainer)
        return seen["rollout"]

    def recording_score(inputs):
        seen["scored"] = score(inputs)
        return seen["scored"]

    trainer.rollout_func, trainer._generate_and_score_completions = recording_rollout, recording_score
    trainer.train()
    return seen


@pytest.mark.parametrize("mode", ["filter", "replace"])
def test_dynamic_sampling_trains_kept_groups_only(suite, tiny_dir, tmp_path, mode):
    """Steps of 2 groups drawn from tasks that always pass, never pass or pass half the time: the slots TRL trains
    hold informative groups only, masked slots (no informative group left to fill them) count no token in the
    loss normaliser, and the records keep every group drawn. Step 2 (seed 0) finds one informative group in two
    draws: filter masks the other slot, replace fills it with a copy."""
    trainer = mixed_trainer(
        suite, tiny_dir, tmp_path, dynamic_sampling=mode, max_extra_draws=1, max_steps=2, env_adaptation=False
    )
    seen = recorded_step(trainer)
    rewards, masks = seen["rollout"]["seal_reward"], seen["rollout"]["env_mask"]
    slots = [(rewards[i : i + 2], masks[i : i + 2]) for i in range(0, len(rewards), 2)]
    trained = [r for r, m in slots if any(map(any, m))]
    assert all(len(set(r)) == 2 for r in trained)  # every trained group's rewards differ
    assert int(seen["scored"]["num_items_in_batch"]) == sum(sum(m) for m in masks)  # masked: out of the normaliser
    run = tmp_path / "run" / "iterations" / "step_000002"
    groups = json.loads((run / "metrics.json").read_text())["groups"]
    assert groups["kept"] == 1, "seed 0's step 2 no longer leaves a slot empty: this test would prove less"
    recorded = [t.reward for t in read_trajectories(run / "trajectories.parquet")]
    drawn = [recorded[i : i + 2] for i in range(0, len(recorded), 2)]  # every group drawn, in draw order
    assert groups["drawn"] == len(drawn) and groups["kept"] == sum(len(set(r)) == 2 for r in drawn)
    assert groups["trained"] == len(trained) and groups["trained"] + groups["masked"] == 2
    if mode == "replace":
        assert groups["masked"] == 0 and groups["copies"] == 1 and rewards[:2] == rewards[2:]
    else:
        assert groups["trained"] == 1 and groups["masked"] == 1


def test_dynamic_sampling_and_the_frontier_resume_drawing_what_an_uninterrupted_run_draws(suite, tiny_dir, tmp_path):
    """Three steps with extra draws and frontier task sampling, uninterrupted and resumed from checkpoint 1 and 2:
    every step draws the same tasks (the draws depend on the seed, the step and the checkpointed pass rates)."""
    import shutil

    run = tmp_path / "run"
    settings = dict(dynamic_sampling="filter", max_extra_draws=2, task_sampler="frontier", max_steps=3)
    mixed_trainer(suite, tiny_dir, tmp_path, **settings).train()
    straight = task_ids(run)
    assert len({tuple(step) for step in straight}) > 1  # the steps drew different tasks, or this proves nothing
    for kept in (2, 1):
        for step in range(kept + 1, 4):
            shutil.rmtree(run / f"checkpoint-{step}")
        mixed_trainer(suite, tiny_dir, tmp_path, **settings).train(resume_from_checkpoint=True)
        assert task_ids(run) == straight, f"resumed from checkpoint-{kept}"
    state = load_state(run / "checkpoint-3")["task_sampler"]
    assert state["kind"] == "frontier" and state["latest"]


def test_each_micro_batch_of_a_generation_holds_whole_groups(suite, tiny_dir, tmp_path):
    """4 groups of 2 rollouts generated at once and trained in 4 micro-batches of 2 (one optimizer step): TRL
    shuffles the rows before cutting them; the trainer regroups them, so every micro-batch holds one prompt."""
    trainer = mixed_trainer(
        suite, tiny_dir, tmp_path, per_device_train_batch_size=2, gradient_accumulation_steps=4, max_steps=1
    )
    prompts_seen = []
    compute = trainer._compute_loss

    def recording(model, inputs):
        prompts_seen.append({tuple(row) for row in inputs["prompt_ids"].tolist()})
        return compute(model, inputs)

    trainer._compute_loss = recording
    trainer.train()
    assert len(prompts_seen) == 4 and all(len(p) == 1 for p in prompts_seen)
    assert len(set().union(*prompts_seen)) == 4  # the generation's 4 groups, one per micro-batch
