"""`seal-hub estimate`: every shipped GPU config fits its card, the CLI's contract, and parts against formulas."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import torch
from helpers.paths import RECIPE_CONFIGS as CONFIGS

from seal_hub.cli import main
from seal_hub.estimate import estimate_plan, load_plan, resolve_shape
from seal_hub.estimate.parts import (
    GB,
    activations,
    compute_bytes,
    layer_activation_bytes,
    lora_params,
    quantized_bytes_per_weight,
    rollout,
    trainable,
    weights,
)
from seal_hub.estimate.plan import LaunchPlan
from seal_hub.estimate.shapes import ModelShape, shape_from_config, shipped_backbones

LAST_LINE = re.compile(r"^estimate: (\d+\.\d) GB per GPU, (fits in|does not fit in) (\d+(?:\.\d+)?) GB$")


def gpu_configs() -> list[Path]:
    return [path for path in sorted(CONFIGS.glob("*.yaml")) if not load_plan(path).use_cpu]


@pytest.fixture(scope="module")
def plan_7b_qlora():
    return load_plan(CONFIGS / "qwen2.5-7b-qlora.yaml")


def tiny_shape(**changes) -> ModelShape:
    values = dict(
        hidden_size=64,
        intermediate_size=160,
        num_layers=3,
        num_heads=4,
        num_kv_heads=2,
        head_dim=16,
        vocab_size=512,
        tied_embeddings=False,
        qkv_bias=True,
    )
    return ModelShape(**{**values, **changes})


# ----- the shipped configs -----


def test_there_are_gpu_configs_to_check():
    names = {path.name for path in gpu_configs()}
    assert {"qwen2.5-3b-lora.yaml", "qwen2.5-7b-qlora.yaml", "paper_full_ft.yaml"} <= names


@pytest.mark.parametrize("path", gpu_configs(), ids=lambda p: p.stem)
def test_every_gpu_config_fits_the_card_it_names(path):
    plan = load_plan(path)
    assert plan.card_source != "default: the config names no card", f"{path.name} names no card"
    estimate = estimate_plan(plan)
    assert estimate.fits, f"{path.name}: {estimate.summary_line()}"


@pytest.mark.parametrize("path", gpu_configs(), ids=lambda p: p.stem)
def test_gpu_configs_keep_trls_batch_rules(path):
    """TRL 1.16's GRPOConfig: the generation batch holds whole prompt groups and whole micro-batch steps."""
    plan = load_plan(path)
    batches = plan.batch_arithmetic()
    per_step = plan.micro_batch * plan.launch.num_processes
    assert batches["rollouts_per_generation"] % plan.num_generations == 0
    assert batches["rollouts_per_generation"] % per_step == 0
    assert batches["rollouts_per_optimizer_step"] % plan.num_generations == 0
    assert plan.steps_per_generation is None or plan.generation_batch_size is None


# ----- the command line -----


def test_cli_prints_a_table_and_the_contract_last_line(capsys):
    code = main(["estimate", "--config", str(CONFIGS / "qwen2.5-7b-qlora.yaml")])
    lines = capsys.readouterr().out.strip().splitlines()
    assert code == 0
    match = LAST_LINE.match(lines[-1])
    assert match, lines[-1]
    assert match.group(2) == "fits in" and match.group(3) == "24"
    assert any(line.startswith("log-prob head") for line in lines)
    assert any(line.startswith("rollout KV cache") for line in lines)


def test_cli_says_does_not_fit_on_a_small_card(capsys):
    code = main(["estimate", "--config", str(CONFIGS / "qwen2.5-7b-qlora.yaml"), "--gpu-memory", "4"])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert code == 0
    match = LAST_LINE.match(last)
    assert match and match.group(2) == "does not fit in" and match.group(3) == "4"


def test_cli_gpus_shard_zero3_state(capsys):
    config = str(CONFIGS / "paper_full_ft.yaml")
    main(["estimate", "--config", config, "--gpus", "2"])
    two = float(LAST_LINE.match(capsys.readouterr().out.strip().splitlines()[-1]).group(1))
    main(["estimate", "--config", config, "--gpus", "8"])
    eight = float(LAST_LINE.match(capsys.readouterr().out.strip().splitlines()[-1]).group(1))
    assert eight < two


@pytest.mark.parametrize(
    "text, expected",
    [
        (None, "does not exist"),
        ("per_device_train_batch_size: many\n", "wrong type"),
        ("- a list\n", "not a mapping"),
        ("model_name_or_path: [unclosed\n", "not valid YAML"),
    ],
)
def test_bad_config_is_a_one_line_error_with_exit_2(tmp_path, capsys, text, expected):
    path = tmp_path / "bad.yaml"
    if text is not None:
        path.write_text(text)
    code = main(["estimate", "--config", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and expected in err[0]


def test_unknown_offline_model_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = tmp_path / "other.yaml"
    path.write_text("model_name_or_path: nobody/not-a-shipped-model\n")
    code = main(["estimate", "--config", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "shipped backbone" in err[0]


# ----- shapes -----


def test_shape_counts_the_parameters_of_a_real_model():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=512,
        hidden_size=64,
        intermediate_size=160,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=False,
    )
    model = Qwen2ForCausalLM(config)
    shape = shape_from_config(config.to_dict())
    assert shape.num_params == sum(p.numel() for p in model.parameters())


def test_every_shipped_backbone_names_its_source_and_resolves_offline():
    for name, entry in shipped_backbones().items():
        assert entry["source"].startswith("https://huggingface.co/")
        shape = resolve_shape(name)
        assert shape.hidden_size == entry["hidden_size"] and shape.num_layers == entry["num_hidden_layers"]


# ----- parts against formulas -----


def test_lora_params_are_rank_times_in_plus_out(plan_7b_qlora):
    shape = tiny_shape()
    plan = dataclasses.replace(plan_7b_qlora, lora_r=8, lora_target_modules=("q_proj", "down_proj"))
    h, i, layers = shape.hidden_size, shape.intermediate_size, shape.num_layers
    assert lora_params(shape, plan) == layers * 8 * ((h + shape.q_dim) + (i + h))


def test_4bit_weights_store_half_a_byte_plus_constants(plan_7b_qlora):
    shape = tiny_shape()
    plan = dataclasses.replace(plan_7b_qlora, nested_quant=False, dtype="bfloat16")
    quantized = shape.num_layers * shape.layer_linear_params
    expected = quantized * (0.5 + 4 / 64) + (shape.num_params - quantized) * 2
    assert weights(shape, plan)[0].bytes == pytest.approx(expected)
    assert quantized_bytes_per_weight(True) < quantized_bytes_per_weight(False)


def test_full_finetune_optimizer_and_zero3_sharding(plan_7b_qlora):
    shape = tiny_shape()
    full = dataclasses.replace(plan_7b_qlora, use_peft=False, load_in_4bit=False, dtype="float32", beta=0.0)
    parts = {p.name: p.bytes for p in trainable(shape, full)}
    assert parts["gradients"] == shape.num_params * 4
    assert parts["optimizer state"] == 2 * shape.num_params * 4
    zero3 = dataclasses.replace(full, dtype="bfloat16", launch=LaunchPlan(num_processes=4, zero_stage=3))
    sharded = {p.name: p.bytes for p in [*trainable(shape, zero3), *weights(shape, zero3)]}
    assert sharded["optimizer state"] == shape.num_params * 12 / 4  # fp32 master + two fp32 moments
    assert sharded["weights"] == shape.num_params * 2 / 4


def test_rollout_kv_cache_is_episodes_times_context_times_kv_bytes(plan_7b_qlora):
    shape = tiny_shape()
    plan = dataclasses.replace(plan_7b_qlora, use_vllm=False, max_live_episodes=5, max_context_tokens=300)
    kv = next(p for p in rollout(shape, plan) if p.name == "rollout KV cache")
    per_token = 2 * shape.num_layers * shape.num_kv_heads * shape.head_dim * compute_bytes(plan)
    assert kv.bytes == 5 * 300 * per_token
    vllm = dataclasses.replace(plan, use_vllm=True, vllm_gpu_memory_utilization=0.25, card_gb=40)
    assert rollout(shape, vllm)[0].bytes == pytest.approx(0.25 * 40 * GB)
    assert rollout(shape, dataclasses.replace(vllm, vllm_server=True)) == []  # server mode: the server's GPUs


def test_checkpointing_keeps_layer_inputs_not_every_layer(plan_7b_qlora):
    shape = tiny_shape(num_layers=24)
    plan = dataclasses.replace(plan_7b_qlora, micro_batch=2, max_context_tokens=1000)
    parts = {p.name: p for p in activations(shape, plan)}
    tokens = 2 * 1000
    assert parts["activations, checkpointed"].phase == "update"
    assert parts["activations, no checkpointing"].phase == "info"
    inputs = tokens * shape.hidden_size * compute_bytes(plan) * (shape.num_layers + 1)
    assert parts["activations, checkpointed"].bytes > inputs
    every_layer = tokens * shape.num_layers * layer_activation_bytes(shape, plan)
    assert parts["activations, no checkpointing"].bytes > every_layer
    off = dataclasses.replace(plan, gradient_checkpointing=False)
    assert {p.name: p.phase for p in activations(shape, off)}["activations, no checkpointing"] == "update"


def test_layer_activation_bytes_match_what_autograd_saves(plan_7b_qlora):
    """Per token, the bytes a real fp32 Qwen2 decoder layer saves for backward (padded batch, SDPA)."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=256,
        hidden_size=64,
        intermediate_size=160,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        attn_implementation="sdpa",
    )
    model = Qwen2ForCausalLM(config).train()
    batch, seq = 2, 48
    ids = torch.randint(0, 256, (batch, seq))
    mask = torch.ones_like(ids)
    mask[-1, -5:] = 0
    layer = model.model.layers[0]
    seen: dict[int, int] = {}
    masks: set[int] = set()

    def pack(tensor):
        storage = tensor.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
        if tensor.shape[-2:] == (seq, seq):  # the attention mask/bias: counted as its own part
            masks.add(storage.data_ptr())
        return tensor

    captured = {}
    layer.register_forward_pre_hook(lambda module, args, kwargs: captured.update(kwargs=kwargs), with_kwargs=True)
    layer.register_forward_pre_hook(lambda module, args: captured.update(args=args))
    model(input_ids=ids, attention_mask=mask, use_cache=False)
    hidden = captured["args"][0].detach().requires_grad_(True)
    kwargs = {k: v for k, v in captured["kwargs"].items() if k != "hidden_states"}
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        layer(hidden, **kwargs)
    weights_bytes = {p.untyped_storage().data_ptr() for p in layer.parameters()}
    saved = sum(size for ptr, size in seen.items() if ptr not in weights_bytes and ptr not in masks)
    shape = shape_from_config(config.to_dict())
    plan = dataclasses.replace(plan_7b_qlora, bf16=False, load_in_4bit=False, dtype="float32", use_peft=False)
    estimated = layer_activation_bytes(shape, plan) * batch * seq
    assert 0.9 < estimated / saved < 1.1, (estimated, saved)


def test_an_experiment_config_is_its_base_with_overrides_and_its_own_card():
    base = load_plan(CONFIGS / "qwen2.5-7b-qlora.yaml")
    experiment = load_plan(CONFIGS / "experiment_qwen2.5-7b-lora.yaml")
    assert base.load_in_4bit and not experiment.load_in_4bit  # the experiment's `base:` override
    assert experiment.micro_batch == base.micro_batch and experiment.model == base.model
    assert experiment.card_gb > base.card_gb  # its own comment names a larger card than its base's


def test_accelerate_config_option_sets_processes_and_zero_stage(tmp_path, capsys):
    launch = tmp_path / "zero3_two.yaml"
    launch.write_text("distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 3\nnum_processes: 2\n")
    plan = load_plan(CONFIGS / "qwen2.5-3b-lora.yaml", accelerate_config=launch)
    assert (plan.launch.num_processes, plan.launch.zero_stage) == (2, 3)
    single = load_plan(CONFIGS / "qwen2.5-3b-lora.yaml")
    assert (single.launch.num_processes, single.launch.zero_stage) == (1, 0)
