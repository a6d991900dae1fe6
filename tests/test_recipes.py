"""The recipe's configs: every YAML parses through TrlParser into valid configs, and builds a SealTrainer on
CPU as far as a CPU allows (the tiny model stands in for the GPU models, which cannot be downloaded here)."""

from __future__ import annotations

import pytest
import yaml
from helpers.paths import DEMO_CONFIG, LOOP, RECIPE_CONFIGS, ROOT
from helpers.recipes import parse, recipe_module

CONFIGS = sorted([DEMO_CONFIG, *(p for p in RECIPE_CONFIGS.glob("*.yaml") if not p.name.startswith("experiment_"))])
GPU_CONFIGS = {"qwen2.5-3b-lora.yaml", "qwen2.5-7b-qlora.yaml", "paper_full_ft.yaml", "qwen2.5-7b-full-server.yaml"}


def test_the_expected_configs_exist():
    assert {p.name for p in CONFIGS} == {"demo_cpu.yaml"} | GPU_CONFIGS
    for name in ("single_gpu", "cpu", "multi_gpu", "zero2", "zero3", "zero3_multinode"):
        config = yaml.safe_load((ROOT / "recipes" / "accelerate" / f"{name}.yaml").read_text())
        assert config["num_processes"] >= 1 and "distributed_type" in config


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.stem)
def test_config_parses_into_valid_arguments(config, monkeypatch, tmp_path):
    script, training, model, tasks, warmup = parse(
        config, "--output_dir", str(tmp_path), gpu=config.name in GPU_CONFIGS, monkeypatch=monkeypatch
    )
    assert training.num_generations >= 2 and training.max_steps > 0
    assert yaml.safe_load(config.read_text())["bf16"] == (config.name in GPU_CONFIGS)
    assert (training.env_adaptation, training.reweighting, training.closed_loop) == (True, True, True)
    if config.name == "paper_full_ft.yaml":
        assert (training.learning_rate, training.beta, training.epsilon, training.temperature) == (
            1e-6,
            0.001,
            0.2,
            1.0,
        )
        assert training.num_generations == 8 and training.max_steps_per_turn == 20 and training.use_vllm
        assert training.loss_type == "grpo" and not model.use_peft  # verl token-mean over 1-sequence micro-batches
    if config.name == "qwen2.5-7b-qlora.yaml":
        assert model.load_in_4bit and model.bnb_4bit_quant_type == "nf4" and model.use_bnb_nested_quant
    if config.name == "demo_cpu.yaml":
        assert training.use_cpu and not training.bf16 and model.use_peft and tasks.suite == "bfcl-single"
        # the demo shows learning held-out: >= 100 test tasks across several categories, before and after
        assert script.held_out_comparison and training.eval_tasks >= 100 and len(tasks.categories) >= 3
        assert warmup.sft_warmup_steps > 0 and not training.gradient_checkpointing


def test_ablation_flags_override_the_yaml(monkeypatch, tmp_path):
    _, training, *_ = parse(
        DEMO_CONFIG,
        "--output_dir",
        str(tmp_path),
        "--env_adaptation",
        "false",
        "--reweighting",
        "false",
        "--closed_loop",
        "false",
        monkeypatch=monkeypatch,
    )
    assert (training.env_adaptation, training.reweighting, training.closed_loop) == (False, False, False)


@pytest.mark.parametrize("bf16_cpu", [False, True], ids=["cpu-without-bf16", "cpu-with-bf16"])
def test_bf16_on_a_cpu_is_refused_with_the_fix(bf16_cpu, monkeypatch, tmp_path):
    """A GPU config on a machine without a GPU: a CPU without bf16 instructions cannot take bf16, one with them
    only with use_cpu (transformers' own refusal names neither fix)."""
    monkeypatch.setattr("seal_hub.training.config.cpu_has_bf16", lambda: bf16_cpu)
    with pytest.raises(ValueError, match="use_cpu=True" if bf16_cpu else "lists neither") as refused:
        parse(
            ROOT / "recipes" / "configs" / "qwen2.5-3b-lora.yaml",
            "--output_dir",
            str(tmp_path),
            monkeypatch=monkeypatch,
        )
    assert "bf16=False" in str(refused.value)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.stem)
def test_each_config_builds_a_trainer_on_cpu(config, monkeypatch, tmp_path, suite):
    """The config's trainer settings with the tiny model in place of the GPU model (and no GPU-only parts)."""
    from seal_hub.models import build_tiny_model, load_policy, lora_config
    from seal_hub.training import SealTrainer

    tiny = build_tiny_model(tmp_path / "tiny")
    flags = [
        "--output_dir",
        str(tmp_path / "out"),
        "--model_name_or_path",
        str(tiny),
        "--bf16",
        "false",
        "--use_cpu",
        "true",
        "--load_in_4bit",
        "false",
        "--use_vllm",
        "false",
        "--dtype",
        "float32",
        "--gradient_checkpointing",
        "false",
    ]
    _, training, model_args, task_args, _ = parse(config, *flags, monkeypatch=monkeypatch)
    recipe = recipe_module()
    if task_args.suite != suite.name:  # the demo trains bfcl-single
        from seal_hub.envs.builtin import load_suite

        suite = load_suite(task_args.suite)
    tasks = recipe.training_tasks(suite, task_args)[:2]
    model, tokenizer = load_policy(model_args)
    trainer = SealTrainer(
        model,
        args=training,
        processing_class=tokenizer,
        peft_config=lora_config(model_args),
        suite=suite,
        train_tasks=tasks,
    )
    assert trainer.args.num_generations == training.num_generations
    assert (
        (trainer.model.peft_config is not None) == model_args.use_peft
        if hasattr(trainer.model, "peft_config")
        else not model_args.use_peft
    )
    assert trainer.store.versions() == ["v0"]


def test_demo_picks_the_shortest_training_prompts(suite):
    recipe = recipe_module()
    task_args = recipe.TaskArguments(task_order="shortest", num_train_tasks=3)
    tasks = recipe.training_tasks(suite, task_args)
    sizes = [recipe.prompt_size(suite, t) for t in tasks]
    everything = recipe.training_tasks(suite, recipe.TaskArguments(task_order="split"))
    assert sizes == sorted(sizes) and sizes[-1] <= min(recipe.prompt_size(suite, t) for t in everything[:50])


def test_training_defaults_to_the_paper_split_and_keeps_the_others(suite, tmp_path):
    from seal_hub.envs.bfcl import paper_split, stratified_split

    recipe = recipe_module()
    paper = paper_split()
    default = recipe.training_tasks(suite, recipe.TaskArguments())
    assert [t.id for t in default] == list(paper.train)
    seeded = recipe.training_tasks(suite, recipe.TaskArguments(split_file="stratified", split_seed=3))
    assert [t.id for t in seeded] == list(stratified_split(suite.tasks, seed=3).train)
    assert [t.id for t in seeded] != list(paper.train)
    path = tmp_path / "split.json"
    path.write_text('{"train": ["multi_turn_base_7", "multi_turn_base_2"], "test": []}')
    by_path = recipe.training_tasks(suite, recipe.TaskArguments(split_file=str(path)))
    assert [t.id for t in by_path] == ["multi_turn_base_7", "multi_turn_base_2"]


@pytest.mark.parametrize("config", [c for c in CONFIGS if c.name in GPU_CONFIGS], ids=lambda c: c.name)
def test_gpu_configs_train_on_the_paper_split_with_its_episode_budget(config, monkeypatch):
    _, training, _, tasks, _ = parse(config, gpu=True, monkeypatch=monkeypatch)
    assert tasks.split_file == "paper"
    assert training.max_steps_per_episode == 20
    assert training.interface_mode == "released"  # the paper configs reproduce the released run


def test_a_zero_episode_budget_is_refused_with_the_field_name(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="max_steps_per_episode"):
        parse(DEMO_CONFIG, "--output_dir", str(tmp_path), "--max_steps_per_episode", "0", monkeypatch=monkeypatch)


def test_paper_full_ft_takes_the_released_optimisation_settings(monkeypatch):
    _, training, *_ = parse(ROOT / "recipes" / "configs" / "paper_full_ft.yaml", gpu=True, monkeypatch=monkeypatch)
    assert str(training.lr_scheduler_type).rsplit(".", 1)[-1].lower() == "constant"
    assert training.weight_decay == 0.01 and training.learning_rate == 1e-6
    assert training.loss_type == "grpo" and training.delta == 10.0 and training.epsilon == 0.2
    assert training.vllm_importance_sampling_correction is False and training.use_bias_correction_kl is False
    assert training.max_completion_length == 4096


# every threshold of interface evolution and of the rho update, set from the recipe to a value unlike its default
EVOLVE_FLAGS = {
    "type_hints": ("true", True),
    "hint_kinds": (["parse_error", "bad_path"], ["parse_error", "bad_path"]),
    "guideline_min_prevalence": ("0.2", 0.2),
    "guideline_min_count": ("4", 4),
    "guideline_max_mean_reward": ("0.5", 0.5),
    "max_guidelines": ("2", 2),
    "rho_beta": ("0.5", 0.5),
    "rho_count_scale": ("16", 16.0),
    "rho_min": ("0.7", 0.7),
    "rho_max": ("1.5", 1.5),
}


def test_every_evolution_threshold_is_a_recipe_flag_that_reaches_the_trainer(monkeypatch, tmp_path, suite):
    from dataclasses import fields

    from seal_hub.interface.evolve import EvolveConfig
    from seal_hub.interface.rho import RhoSettings
    from seal_hub.models import build_tiny_model, load_policy
    from seal_hub.training import SealTrainer

    switches = {"schema_cues", "recovery_feedback", "capability_guidelines", "default_values"}  # mode and suite's
    thresholds = {f.name for f in fields(EvolveConfig)} - switches
    assert set(EVOLVE_FLAGS) == thresholds | {f.name for f in fields(RhoSettings)} - {"closed_loop", "reweighting"}
    defaults = EvolveConfig()
    flags = ["--output_dir", str(tmp_path / "out"), "--model_name_or_path", str(build_tiny_model(tmp_path / "tiny"))]
    for name, (text, value) in EVOLVE_FLAGS.items():
        assert getattr(RhoSettings() if name.startswith("rho_") else defaults, name) != value, name
        flags += [f"--{name}", *([text] if isinstance(text, str) else text)]
    _, training, model_args, task_args, _ = parse(LOOP, *flags, monkeypatch=monkeypatch)
    model, tokenizer = load_policy(model_args)
    tasks = recipe_module().training_tasks(suite, task_args)[:1]
    trainer = SealTrainer(model, args=training, processing_class=tokenizer, suite=suite, train_tasks=tasks)
    for name, (_, value) in EVOLVE_FLAGS.items():
        record = trainer.window.settings if name.startswith("rho_") else trainer.evolve_config
        expected = tuple(value) if isinstance(value, list) else value
        assert getattr(record, name) == expected, name


@pytest.mark.parametrize(
    ("flag", "value"), [("rho_beta", "0"), ("rho_min", "3"), ("max_guidelines", "9"), ("hint_kinds", "no_such_kind")]
)
def test_a_bad_evolution_threshold_is_refused_with_its_name(flag, value, monkeypatch, tmp_path):
    with pytest.raises(ValueError, match=flag):
        parse(DEMO_CONFIG, "--output_dir", str(tmp_path), f"--{flag}", value, monkeypatch=monkeypatch)


@pytest.mark.parametrize(
    ("setting", "reason"),
    [
        ({"vllm_mode": "remote"}, "'colocate' or 'server'"),
        ({"vllm_enable_sleep_mode": True}, "freed cache"),
        ({"vllm_tensor_parallel_size": 2}, "same requests"),
    ],
)
def test_vllm_settings_seals_rollouts_cannot_run_under_are_refused_with_why(setting, reason, tmp_path):
    from seal_hub.training import SealConfig

    fine = {"use_vllm": True, "vllm_mode": "colocate", "use_cpu": True, "bf16": False, "output_dir": str(tmp_path)}
    with pytest.raises(ValueError, match=reason):
        SealConfig(**(fine | setting))


def test_server_mode_leaves_the_servers_parallelism_to_the_server(tmp_path):
    """`vllm serve --tensor-parallel-size` is the server's flag: server mode accepts what colocate refuses."""
    from seal_hub.training import SealConfig

    config = SealConfig(
        use_vllm=True, vllm_mode="server", vllm_tensor_parallel_size=2, use_cpu=True, output_dir=str(tmp_path)
    )
    assert config.vllm_mode == "server"


def test_the_docs_four_plus_four_gpu_server_command_parses_into_server_mode(tmp_path, monkeypatch):
    """docs/scale-out.md, "vLLM server mode": paper_full_ft.yaml with generation moved to a server on other GPUs."""
    flags = ["--vllm_mode", "server", "--vllm_server_host", "127.0.0.1", "--vllm_server_port", "8000"]
    paper = ROOT / "recipes" / "configs" / "paper_full_ft.yaml"
    parsed = parse(paper, "--output_dir", str(tmp_path), *flags, gpu=True, monkeypatch=monkeypatch)
    config = next(p for p in parsed if hasattr(p, "vllm_mode"))
    assert (config.use_vllm, config.vllm_mode, config.vllm_server_host) == (True, "server", "127.0.0.1")
    assert config.gradient_accumulation_steps == 16 and config.generation_batch_size == 256
    assert "--vllm_mode server --vllm_server_host 127.0.0.1" in (ROOT / "docs" / "scale-out.md").read_text()


def test_fewer_training_tasks_than_one_generation_batch_draws_is_refused_with_the_numbers(tmp_path):
    """TRL's sampler drops an incomplete generation batch: 1 task for a batch of 2 prompts would train nothing."""
    from seal_hub.training import SealConfig
    from seal_hub.training.selection import TooFewTasksError, check_enough_tasks

    config = SealConfig(
        output_dir=str(tmp_path), use_cpu=True, per_device_train_batch_size=8, num_generations=4, report_to=[]
    )
    check_enough_tasks(2, config)  # 8 rollouts / 4 generations = 2 prompts per generation batch
    with pytest.raises(TooFewTasksError, match=r"1 training task\(s\), but one generation batch takes 2 distinct"):
        check_enough_tasks(1, config)
