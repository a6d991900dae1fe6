"""A tiny random tool-calling policy for tests: Qwen2 architecture, BFCL-trained BPE tokenizer, TRL's template.

`build_tiny_model(out_dir, seed=0)` writes a normal Hugging Face model directory (``config.json``,
``model.safetensors``, ``generation_config.json``, tokenizer files, ``chat_template.jinja``) that
`load_policy` loads like any other local model, offline. The weights are random, so its replies are noise; what it
exercises is the plumbing: chat templating with tools, tokenising BFCL prompts, generation, LoRA, TRL's trainers.

Design choices:

- Qwen2 (hidden 64, 2 layers, 4 heads / 2 KV heads, tied embeddings) with ``max_position_embeddings`` 32768, so a
  BFCL prompt with every tool of several API classes fits, as it does for Qwen2.5.
- A byte-level BPE of 4096 tokens (any text encodes) trained with ``tokenizers`` on the text it will see (BFCL
  multi-turn questions and function docs, the chat template's fixed text) with Qwen2's normaliser and
  pre-tokeniser. Its vocabulary ships (``data/tiny_bpe.json``), so the model builds the same without the ``bfcl``
  extra; regenerate it after a bfcl-eval or tokenizers upgrade with
  ``python -m seal_hub.models.tiny > seal_hub/models/data/tiny_bpe.json`` (a test holds it equal to a fresh
  training where bfcl-eval is installed).
- Qwen2.5's special tokens (``<|endoftext|>`` padding, ``<|im_start|>``, ``<|im_end|>`` end of turn and eos);
  ``<tool_call>``, ``</tool_call>``, ``<tool_response>``, ``</tool_response>`` are single added tokens that are
  *not* special, as in Qwen2.5: TRL decodes with ``skip_special_tokens=True``, which would delete the tags.
- Deterministic given `seed`: a fixed corpus order, deterministic BPE training, weights drawn under a forked,
  seeded torch RNG (the caller's RNG state is left alone).

Not covered: anything that needs a model that has learned something (use the demo model for that).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import torch
from tokenizers import AddedToken, Regex, Tokenizer, models, normalizers, pre_tokenizers, trainers
from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM, Qwen2Tokenizer
from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

from seal_hub.models.chat_templates import CHATML_SPECIAL_TOKENS, HERMES_TOOL_TOKENS, tool_chat_template
from seal_hub.models.config import PolicyConfig

PAD_TOKEN = "<|endoftext|>"
BPE_FILE = "tiny_bpe.json"  # package data (data/): the vocabulary and merges of `train_bpe(SHIPPED_VOCAB)`
SHIPPED_VOCAB = 4096
SPECIAL_TOKENS = (PAD_TOKEN, *CHATML_SPECIAL_TOKENS)
TINY_CONTEXT = 32_768


def bfcl_corpus() -> Iterator[str]:
    """BFCL multi-turn user questions and function docs (as raw docs and as chat-template tools), fixed order."""
    try:
        data = resources.files("bfcl_eval").joinpath("data")
    except ModuleNotFoundError:
        raise ValueError(
            f"training a tiny tokenizer of another size than {SHIPPED_VOCAB} reads bfcl-eval's data: "
            'pip install "seal_hub[bfcl]"'
        ) from None
    questions = sorted(p.name for p in data.iterdir() if p.name.startswith("BFCL_v4_multi_turn_"))
    for name in questions:
        for line in data.joinpath(name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                for turn in json.loads(line).get("question", []):
                    yield from (message.get("content", "") for message in turn)
    docs = data.joinpath("multi_turn_func_doc")
    for name in sorted(p.name for p in docs.iterdir() if p.name.endswith(".json")):
        for line in docs.joinpath(name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                doc = json.loads(line)
                yield line
                yield json.dumps({"type": "function", "function": _as_tool(doc)}, ensure_ascii=False)


def _as_tool(doc: dict) -> dict:
    """A BFCL doc in roughly the shape chat templates render (close enough to learn the same merges)."""
    parameters = dict(doc.get("parameters", {}), type="object")
    return {"name": doc["name"], "description": doc.get("description", ""), "parameters": parameters}


def train_bpe(vocab_size: int = SHIPPED_VOCAB) -> dict[str, Any]:
    """The vocabulary and merges of a byte-level BPE trained on `bfcl_corpus` plus the tool chat template
    (``{"vocab": {token: id}, "merges": [[a, b], ...]}``); needs bfcl-eval.

    Trained with the exact normaliser and pre-tokeniser `Qwen2Tokenizer` builds, so the tokenizer made from it
    (and reloaded from disk, which transformers rebuilds as a `Qwen2Tokenizer`) encodes identically.
    """
    template = tool_chat_template()
    bpe = Tokenizer(models.BPE())
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator([*bfcl_corpus(), template], trainer=trainer)
    trained = json.loads(bpe.to_str())["model"]
    return {"vocab": trained["vocab"], "merges": [list(merge) for merge in trained["merges"]]}


def shipped_bpe() -> dict[str, Any]:
    """The vocabulary and merges `train_bpe(SHIPPED_VOCAB)` gives, as shipped with the package."""
    return json.loads(resources.files("seal_hub.models").joinpath("data", BPE_FILE).read_text(encoding="utf-8"))


def train_tokenizer(vocab_size: int = SHIPPED_VOCAB) -> Qwen2Tokenizer:
    """The tiny model's tokenizer: the BPE of `vocab_size` tokens (the shipped one for `SHIPPED_VOCAB`, else
    `train_bpe`'s) with Qwen2.5's special tokens and the tool chat template."""
    trained = shipped_bpe() if vocab_size == SHIPPED_VOCAB else train_bpe(vocab_size)
    tokenizer = Qwen2Tokenizer(
        vocab=trained["vocab"],
        merges=[tuple(merge) for merge in trained["merges"]],
        eos_token="<|im_end|>",
        pad_token=PAD_TOKEN,
        unk_token=None,
        chat_template=tool_chat_template(),
        padding_side="left",
        model_max_length=TINY_CONTEXT,
    )
    tokenizer.add_tokens([AddedToken(token, special=True, normalized=False) for token in SPECIAL_TOKENS])
    tokenizer.add_tokens([AddedToken(token, special=False, normalized=False) for token in HERMES_TOOL_TOKENS])
    return tokenizer


def tiny_config(tokenizer: Qwen2Tokenizer, hidden_size: int = 64, num_layers: int = 2) -> Qwen2Config:
    """The Qwen2 config of the tiny model, with its vocabulary rounded up to a multiple of 64."""
    vocab = -(-len(tokenizer) // 64) * 64
    return Qwen2Config(
        vocab_size=vocab,
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=TINY_CONTEXT,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )


def tiny_policy_dir() -> Path:
    """The directory of the `tiny` policy every command takes by that name, built once in the cache."""
    from seal_hub.models.demo import cache_root

    path = cache_root() / "tiny-policy"
    if not (path / "config.json").exists():
        build_tiny_model(path)
    return path


def named_policy_config(name: str) -> PolicyConfig:
    """The policy a command-line name means: `tiny` (this module's random model, built once in the cache),
    `demo` (SmolLM2-135M-Instruct), else a Hub id or a local directory. Its `model_name_or_path` is the tiny
    model's directory for `tiny` (`resolve_model` maps the name itself too, so a training config may say `tiny`)."""
    if name == "tiny":
        return PolicyConfig(model_name_or_path=str(tiny_policy_dir()))
    return PolicyConfig(model_name_or_path=name)


def build_tiny_model(
    out_dir: str | Path, seed: int = 0, vocab_size: int = SHIPPED_VOCAB, hidden_size: int = 64, num_layers: int = 2
) -> Path:
    """Write a tiny random Qwen2 tool-calling policy to `out_dir` (created if needed); returns the directory."""
    out = Path(out_dir)
    tokenizer = train_tokenizer(vocab_size)
    config = tiny_config(tokenizer, hidden_size, num_layers)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=[tokenizer.eos_token_id, tokenizer.pad_token_id],
        pad_token_id=tokenizer.pad_token_id,
    )
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


if __name__ == "__main__":  # python -m seal_hub.models.tiny > seal_hub/models/data/tiny_bpe.json
    print(json.dumps(train_bpe(SHIPPED_VOCAB), ensure_ascii=False, separators=(",", ":")))
