"""Training on BFCL single-turn: the shipped split (seeded, stratified, disjoint, never trained on its test half),
the single-turn labels, the warm-up in the model's own tool-call format, the advantages those labels weight,
`seal-hub train --suite bfcl-single` end to end, and the one-line refusal of a suite that cannot train."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import torch
from helpers.extras import require_bfcl
from helpers.recipes import recipe_module
from helpers.run_checks import check_run
from helpers.scripted import ScriptedBackend

from seal_hub.diagnosis import DEFAULT_RHO, DiagnosisError, Label
from seal_hub.envs.bfcl_single import key_calls
from seal_hub.envs.bfcl_single.checker import check
from seal_hub.envs.bfcl_single.labels import label_answer
from seal_hub.envs.bfcl_single.splits import fraction_split, packaged_split
from seal_hub.envs.builtin import load_suite
from seal_hub.envs.protocol import Action, ParseError, ToolCall
from seal_hub.envs.tau2_telecom import Tau2TelecomSuite
from seal_hub.models.toolcalls import format_tool_calls
from seal_hub.rollout.records import CallRecord, ParseErrorRecord, StepRecord, TurnRecord, VerdictRecord

require_bfcl()

RUN = "test/single-run"


@pytest.fixture(scope="module")
def single():
    return load_suite("bfcl-single")


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from seal_hub.models import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny"))


# ----- the split -----


def test_the_shipped_split_is_half_of_every_category_seeded_and_disjoint(single):
    train, test = single.split_ids("train"), single.split_ids("test")
    assert (train, test) == (packaged_split().train, packaged_split().test)
    assert set(train).isdisjoint(test) and sorted(train + test) == sorted(single.tasks)
    made = fraction_split(single.tasks, seed=0)  # the shipped file is what the seeded rule makes
    assert (made.train, made.test) == (train, test)
    sizes = Counter(single.task(i).category for i in single.tasks)
    assert Counter(single.task(i).category for i in train) == {c: n // 2 for c, n in sizes.items()}
    assert Counter(single.task(i).category for i in test) == {c: n - n // 2 for c, n in sizes.items()}
    other = single.split_ids("train", "stratified", seed=1)
    assert other != train and Counter(single.task(i).category for i in other) == Counter(
        single.task(i).category for i in train
    )
    assert single.split_ids("train", "stratified", seed=1) == other  # seeded: the same seed, the same split
    assert len(single.split_ids("all")) == len(single) and len(single.split_ids("simple")) == 400


def test_training_tasks_come_from_the_train_half_and_held_out_tasks_from_the_test_half(single, tmp_path):
    from seal_hub.training.held_out import held_out_tasks
    from seal_hub.training.selection import task_split

    recipe = recipe_module()
    test = set(single.split_ids("test"))
    for order in ("split", "shortest"):
        task_args = recipe.TaskArguments(suite="bfcl-single", task_order=order)
        trained = {t.id for t in recipe.training_tasks(single, task_args)}
        assert trained == set(single.split_ids("train")) and not trained & test
    held = held_out_tasks(single, task_split(single, recipe.TaskArguments(suite="bfcl-single")).test, 22)
    assert {t.id for t in held} <= test and len({t.category for t in held}) == len(single.categories)
    path = tmp_path / "split.json"  # --split_file still takes a path
    path.write_text(json.dumps({"train": ["simple_python_3"], "test": ["simple_python_4"]}))
    task_args = recipe.TaskArguments(suite="bfcl-single", split_file=str(path))
    assert [t.id for t in recipe.training_tasks(single, task_args)] == ["simple_python_3"]


# ----- the labels -----


def answered(task, action: Action) -> TurnRecord:
    """The turn record the engine keeps for `action` as the answer to `task`."""
    step = StepRecord(
        text=action.content,
        tool_calls=[CallRecord.of(c) for c in action.tool_calls],
        parse_errors=[ParseErrorRecord(kind=e.kind, message=e.message) for e in action.parse_errors],
    )
    return TurnRecord(index=0, steps=[step], verdict=VerdictRecord.of(check(task, action)))


def test_each_single_turn_verdict_gets_its_label(single):
    simple, parallel, irrelevance = (single.task(i) for i in ("simple_python_0", "parallel_0", "irrelevance_0"))
    [key] = key_calls(simple)  # calculate_triangle_area(base=10, height=5, unit="units"); base, height required
    wrong_value = ToolCall(key.name, {**key.arguments, "base": 11})
    no_base = ToolCall(key.name, {"height": 5})
    undeclared = ToolCall(key.name, {**key.arguments, "colour": "red"})
    ill_typed = ToolCall(key.name, {**key.arguments, "base": "ten"})
    cases = [
        (simple, Action(tool_calls=(key,)), Label.PASS),
        (simple, Action(content="The area is 25."), Label.MISSING_TOOL_CALL),
        (simple, Action(parse_errors=(ParseError("json", "bad JSON", "<tool_call>{"),)), Label.INVALID_TOOL_CALL),
        (simple, Action(tool_calls=(ToolCall("triangle_area", key.arguments),)), Label.INVALID_TOOL_CALL),
        (simple, Action(tool_calls=(ToolCall(key.name, "not json"),)), Label.INVALID_TOOL_CALL),
        (simple, Action(tool_calls=(no_base,)), Label.INVALID_TOOL_CALL),
        (simple, Action(tool_calls=(undeclared,)), Label.INVALID_TOOL_CALL),
        (simple, Action(tool_calls=(ill_typed,)), Label.INVALID_TOOL_CALL),
        (simple, Action(tool_calls=(wrong_value,)), Label.ARGUMENT_MISMATCH),
        (parallel, Action(tool_calls=key_calls(parallel)[:1]), Label.MISSING_TOOL_CALL),
        (parallel, Action(tool_calls=key_calls(parallel)), Label.PASS),
        (irrelevance, Action(tool_calls=(ToolCall(irrelevance.functions[0]["name"], {}),)), Label.SPURIOUS_TOOL_CALL),
        (irrelevance, Action(content="No tool can do that."), Label.CORRECT_ABSTENTION),
    ]
    # a live key that accepts a boolean for a string argument (is_unisex): that value is not ill-typed here either
    live = single.task("live_multiple_552-153-1")
    [live_key] = key_calls(live)
    cases.append(
        (
            live,
            Action(tool_calls=(ToolCall(live_key.name, {**live_key.arguments, "city": "Nowhere"}),)),
            Label.ARGUMENT_MISMATCH,
        )
    )
    for task, action, label in cases:
        turn = answered(task, action)
        assert label_answer(turn, task) == label, (task.id, action)
        assert turn.verdict.passed == (label in (Label.PASS, Label.CORRECT_ABSTENTION))
    # where BFCL's checker names the error, the label agrees with it
    errors = [
        (wrong_value, "value_error", Label.ARGUMENT_MISMATCH),
        (ill_typed, "type_error", Label.INVALID_TOOL_CALL),
        (no_base, "simple_function_checker:missing_required", Label.INVALID_TOOL_CALL),
        (undeclared, "simple_function_checker:unexpected_param", Label.INVALID_TOOL_CALL),
    ]
    for call, error, label in errors:
        turn = answered(simple, Action(tool_calls=(call,)))
        assert turn.verdict.error_type.startswith(error) and label_answer(turn, simple) == label
    # an episode cut before it answered: what the task expected is missing (or rightly absent)
    assert (label_answer(None, simple), label_answer(None, irrelevance)) == (
        Label.MISSING_TOOL_CALL,
        Label.CORRECT_ABSTENTION,
    )


def test_rollouts_are_diagnosed_by_their_suites_rules(single, tiny_dir):
    from transformers import AutoTokenizer

    from seal_hub.generation import SamplingConfig
    from seal_hub.rollout import RolloutConfig, RolloutEngine

    tokenizer = AutoTokenizer.from_pretrained(tiny_dir)
    tasks = single.select(["simple_python_0", "simple_python_0", "irrelevance_0"])
    [key] = key_calls(tasks[0])
    texts = iter([format_tool_calls((key,), "hermes"), "I think the area is 25.", "I cannot help with that."])
    engine = RolloutEngine(
        ScriptedBackend(tokenizer, lambda *_: next(texts)),
        tokenizer,
        single,
        RolloutConfig(sampling=SamplingConfig(temperature=0.0, max_new_tokens=256)),
    )
    trajectories = engine.run(tasks)
    labels = [single.diagnose(t, single.task(t.task_id)).labels for t in trajectories]
    assert labels == [(Label.PASS,), (Label.MISSING_TOOL_CALL,), (Label.CORRECT_ABSTENTION,)]
    with pytest.raises(DiagnosisError, match="suite 'tau2-telecom' has no turn labels"):
        Tau2TelecomSuite(tasks={}).diagnose(trajectories[0], tasks[0])


# ----- the learning interface -----


def test_the_interface_cues_the_offered_functions_and_guides_without_recovery_hints(single, tiny_dir):
    from transformers import AutoTokenizer

    from seal_hub.diagnosis import FailureProfile, RolloutDiagnosis
    from seal_hub.generation import SamplingConfig
    from seal_hub.interface import InterfaceSnapshot
    from seal_hub.interface.evolve import GUIDELINES, SCHEMA_NOTE, evolve, evolve_config_for
    from seal_hub.rollout import RolloutConfig, RolloutEngine

    failing = FailureProfile.of([RolloutDiagnosis(f"t{i}", 0.0, (Label.MISSING_TOOL_CALL,)) for i in range(10)])
    config = evolve_config_for("full", tool_errors=False)
    snapshot = evolve(InterfaceSnapshot.null("bfcl-single"), failing, config)
    assert snapshot.schema_cues.enabled and not snapshot.recovery_feedback.enabled
    assert [g.label for g in snapshot.capability_guidelines.lines] == [Label.MISSING_TOOL_CALL]
    tokenizer = AutoTokenizer.from_pretrained(tiny_dir)
    task = single.task("simple_python_62")  # analyze_dna_sequence: required arguments and an enum
    engine = RolloutEngine(
        ScriptedBackend(tokenizer, lambda *_: "I do not know."),
        tokenizer,
        single,
        RolloutConfig(sampling=SamplingConfig(temperature=0.0, max_new_tokens=16)),
        interface=snapshot,
    )
    [trajectory] = engine.run([task])
    prompt = tokenizer.decode(trajectory.token_ids[: trajectory.prompt_length])
    assert "The DNA sequence to be analyzed. [required]" in prompt
    assert "Allowed values: insertion, deletion, substitution" in prompt
    assert SCHEMA_NOTE in prompt and GUIDELINES[Label.MISSING_TOOL_CALL] in prompt


# ----- the warm-up -----


def test_the_warm_up_teaches_the_answer_key_in_the_models_own_tool_call_format(single, tiny_dir):
    from transformers import AutoTokenizer

    from seal_hub.envs.reference import ABSTAIN
    from seal_hub.interface import InterfaceSnapshot
    from seal_hub.models.parser_style import resolve_parser_style
    from seal_hub.models.toolcalls import ToolCallParser
    from seal_hub.rollout.engine import ChatRenderer, first_messages
    from seal_hub.training.warmup import warmup_dataset

    tokenizer = AutoTokenizer.from_pretrained(tiny_dir)
    ids = ["simple_python_0", "parallel_0", "irrelevance_0", single.split_ids("live_relevance")[0]]
    dataset = warmup_dataset(single, single.select(ids), tokenizer)
    assert len(dataset) == 3  # live_relevance has no answer key to teach
    parser = ToolCallParser(resolve_parser_style(tokenizer, None))
    end = tokenizer.convert_ids_to_tokens(tokenizer.eos_token_id)
    for task_id, row in zip(ids, dataset, strict=False):
        task = single.task(task_id)
        taught = [i for i, label in zip(row["input_ids"], row["labels"], strict=True) if label != -100]
        text = tokenizer.decode(taught)
        assert text.endswith(end)
        action = parser.parse(text.removesuffix(end))
        if task.expects_calls:
            read_back = [(c.name, c.arguments) for c in action.tool_calls]
            assert read_back == [(c.name, c.arguments) for c in key_calls(task)] and not action.parse_errors
            assert check(task, action).passed
        else:
            assert (action.tool_calls, action.content.strip()) == ((), ABSTAIN)
        # the context before the answer is the prompt the rollouts start from, token for token
        messages, tools = first_messages(InterfaceSnapshot.null("bfcl-single"), single.episode(task).reset())
        renderer = ChatRenderer(tokenizer, end)
        prompt = renderer.encode(renderer.text(messages, tools, generation_prompt=True))
        assert row["input_ids"][: len(prompt)] == prompt and set(row["labels"][: len(prompt)]) == {-100}
        assert len(row["input_ids"]) == len(prompt) + len(taught)


# ----- the trainer -----


def test_single_turn_labels_weight_the_advantages(single, tiny_dir, tmp_path):
    from seal_hub.models import PolicyConfig, load_policy, lora_config
    from seal_hub.training import SealConfig, SealTrainer

    policy = PolicyConfig(
        model_name_or_path=str(tiny_dir), use_peft=True, lora_r=4, lora_target_modules=["q_proj", "v_proj"]
    )
    model, tokenizer = load_policy(policy)
    task = single.task(single.split_ids("train")[0])
    key = format_tool_calls(key_calls(task), "hermes")
    backend = lambda model, tokenizer, step: ScriptedBackend(  # noqa: E731 -- rollout 0 answers right, 1 in prose
        tokenizer, lambda session, *_: key if session.split("#")[1] == "0" else "Let me think about it."
    )
    config = SealConfig(
        output_dir=str(tmp_path / "run"),
        per_device_train_batch_size=2,
        num_generations=2,
        max_steps=1,
        report_to=[],
        beta=0.0,
        use_cpu=True,
        max_new_tokens=256,
        env_adaptation=False,
        closed_loop=False,
        disable_tqdm=True,
    )
    trainer = SealTrainer(
        model,
        args=config,
        processing_class=tokenizer,
        peft_config=lora_config(policy),
        suite=single,
        train_tasks=[task],
        backend_factory=backend,
    )
    trainer.model.train()
    output = trainer._generate_and_score_completions([{"prompt": task.id}, {"prompt": task.id}])
    advantages = output["advantages"]
    assert advantages[0] > 0 and torch.isclose(advantages[1], -advantages[0] * DEFAULT_RHO[Label.MISSING_TOOL_CALL])
    assert trainer.evolve_config.recovery_feedback is False  # single-turn answers never run: no tool errors


def test_seal_hub_train_on_bfcl_single_publishes_the_three_artifacts(single, tiny_dir, tmp_path, monkeypatch, capsys):
    import pyarrow.parquet as pq

    from seal_hub.cli import main as cli_main
    from seal_hub.rollout.records import read_trajectories

    registry, out = tmp_path / "registry", tmp_path / "run"
    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(registry))
    flags = ["--suite", "bfcl-single", "--model_name_or_path", str(tiny_dir), "--output_dir", str(out)]
    flags += ["--max_steps", "1", "--num_train_tasks", "1", "--per_device_train_batch_size", "2"]
    flags += ["--num_generations", "2", "--max_new_tokens", "8", "--sft_warmup_steps", "1", "--publish_run", RUN]
    flags += ["--eval_every_steps", "1", "--eval_tasks", "4", "--held_out_comparison", "false"]
    assert cli_main(["train", *flags, "--disable_tqdm", "true"]) == 0
    printed = capsys.readouterr().out
    assert "SEAL run summary" in printed and f"published: {RUN}-trajectories" in printed
    check_run(out, registry, RUN, steps=1, group=2)
    [trajectory, _] = read_trajectories(out / "iterations" / "step_000001" / "trajectories.parquet")
    assert trajectory.task_id in single.split_ids("train") and trajectory.task_id not in single.split_ids("test")
    labels = pq.read_table(out / "iterations" / "step_000001" / "diagnoses.parquet").column("labels").to_pylist()
    assert [len(row) for row in labels] == [1, 1] and {row[0] for row in labels} <= {str(label) for label in Label}
    snapshots = [json.loads(p.read_text()) for p in sorted((out / "interfaces").glob("v*.json"))]
    assert {s["suite"] for s in snapshots} == {"bfcl-single"}
    assert not any(s["recovery_feedback"]["enabled"] for s in snapshots)
    assert (out / "sft-warmup").is_dir()
    held_out = json.loads((out / "held_out" / "step_000001.json").read_text())
    assert held_out["num_tasks"] == 4 and set(held_out["task_ids"]) <= set(single.split_ids("test"))


def test_the_comparison_shows_held_out_success_at_every_grpo_iteration(
    single, tiny_dir, tmp_path, capsys, monkeypatch
):
    """Two GRPO steps with eval_every_steps 1 and the comparison: the summary has a row for step 1's training-time
    evaluation and a learning-curve line base -> warm-up -> step 1 -> step 2; the last step is evaluated once (the
    comparison's final stage, also written as held_out/step_000002.json for `seal-hub report`)."""
    from seal_hub.cli import main as cli_main

    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(tmp_path / "registry"))
    out = tmp_path / "run"
    flags = ["--suite", "bfcl-single", "--model_name_or_path", str(tiny_dir), "--output_dir", str(out)]
    flags += ["--max_steps", "2", "--num_train_tasks", "2", "--per_device_train_batch_size", "2"]
    flags += ["--num_generations", "2", "--max_new_tokens", "4", "--sft_warmup_steps", "1"]
    flags += ["--eval_every_steps", "1", "--eval_tasks", "5", "--eval_max_new_tokens", "4"]
    flags += ["--held_out_comparison", "true", "--save_steps", "1"]
    assert cli_main(["train", *flags, "--disable_tqdm", "true"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    rows = [line.split()[0:3] for line in lines]
    assert ["GRPO", "step", "1"] in rows and ["after", "SEAL"] in [r[:2] for r in rows]
    [curve] = [line for line in lines if line.startswith("held-out learning curve: ")]
    points = curve.removeprefix("held-out learning curve: ").split(" -> ")
    assert [p.rsplit(" ", 1)[0] for p in points] == ["base", "warm-up", "step 1", "step 2"]
    assert points[-1].rsplit(" ", 1)[1] == lines[-1].split(" -> ")[1].split("%")[0] + "%"  # the final is Y
    saved = [json.loads(p.read_text()) for p in sorted((out / "held_out").glob("step_*.json"))]
    assert [(r["step"], r["num_tasks"]) for r in saved] == [(1, 5), (2, 5)]
    assert saved[0]["task_ids"] == saved[1]["task_ids"]  # one set of held-out tasks for the whole curve
    history = json.loads((out / "checkpoint-2" / "trainer_state.json").read_text())["log_history"]
    assert sum("eval_success_rate" in entry for entry in history) == 1  # step 2: the final stage, not twice


@pytest.mark.parametrize("suite", ["tau2-telecom", "bfcl-memory"])
def test_a_suite_that_cannot_train_says_why_in_one_line(suite, tmp_path, capsys):
    from seal_hub.cli import main as cli_main

    assert cli_main(["train", "--suite", suite, "--output_dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"seal-hub train: error: suite '{suite}' cannot train (")
    assert err[0].endswith("); trainable suites: bfcl, bfcl-single")


def test_a_shared_warm_up_is_trained_once_loaded_after_and_refused_under_other_settings(tiny_dir, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from seal_hub.training.warmup import WarmupMismatchError, shared_warmup

    def lora_model(seed: int):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_pretrained(tiny_dir)
        return get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False))

    def lora_weights(model) -> dict:
        return {k: v.clone() for k, v in model.state_dict().items() if "lora_" in k}

    first, trained = lora_model(0), []
    settings = {"steps": 3, "tasks": ["simple_1", "simple_2"]}

    def train():
        trained.append(True)
        with torch.no_grad():
            for name, param in first.named_parameters():
                if "lora_B" in name:
                    param.add_(0.5)  # stands in for the SFT steps

    folder = tmp_path / "warmup" / "seed-0"
    assert shared_warmup(first, folder, settings, train) is False and trained == [True]
    assert json.loads((folder / "warmup.json").read_text()) == settings
    card = (folder / "README.md").read_text()  # PEFT's card, corrected: the base is a folder of this machine
    assert str(tiny_dir) not in card and str(tmp_path) not in card
    second = lora_model(1)  # another LoRA initialisation, as another arm's would be
    assert shared_warmup(second, folder, settings, lambda: trained.append(True)) is True and trained == [True]
    expected, loaded = lora_weights(first), lora_weights(second)
    assert expected.keys() == loaded.keys() and all(torch.equal(expected[k], loaded[k]) for k in expected)
    with pytest.raises(WarmupMismatchError, match="steps differ"):
        shared_warmup(lora_model(2), folder, {**settings, "steps": 4}, lambda: None)
