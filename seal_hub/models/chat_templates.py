"""Tool-capable chat templates: recognise the ones TRL can parse, install TRL's Qwen2.5 template otherwise.

TRL 1.16 finds out how to parse a completion's tool calls by comparing the tokenizer's chat template, as an
exact string, with the templates it bundles (`trl.chat_template_utils.add_response_schema`); any other
template fails with "Unrecognized chat template" as soon as `GRPOTrainer` gets tools. A template that renders
tools is not enough: it has to be one of TRL's, character for character.

Design choice: when a policy's template is not one TRL recognises, we install TRL's bundled ``qwen2_5``
template (ChatML turns, hermes-style tools: the JSON schemas inside ``<tools></tools>`` in the system turn,
calls as ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, results inside ``<tool_response>``).
The text is read from the installed ``trl`` package at run time, never copied into this repository, so it
always equals what the installed TRL compares against. ChatML needs ``<|im_start|>`` / ``<|im_end|>``; a
tokenizer without them gets them as special tokens (and the model new, untrained embedding rows), and
``<|im_end|>`` becomes the end-of-sequence token so generation stops at the end of the assistant's turn.
Qwen2.5's template uses its own default system prompt ("You are Qwen, ...") when the conversation has none, as
every prompt under the null interface has (the warm-up, plain GRPO, held-out evaluations); an interface that
adds a system text keeps that line before it (`seal_hub.models.default_system`).

Not covered: Llama-3.1 style (``<|python_tag|>``) or other tool formats for models whose own template TRL
already recognises (those are kept as they are), and response parsing itself (`seal_hub.models.toolcalls`).
"""

from __future__ import annotations

import logging
from importlib import resources
from types import SimpleNamespace
from typing import Any

from transformers import PreTrainedModel, PreTrainedTokenizerBase

logger = logging.getLogger(__name__)

TOOL_TEMPLATE_NAME = "qwen2_5"
CHATML_SPECIAL_TOKENS = ("<|im_start|>", "<|im_end|>")
# Qwen2.5 keeps these as added tokens that are *not* special: decoding with skip_special_tokens=True (as TRL
# does for completions) must keep them, or the tool calls disappear from the text before they are parsed.
HERMES_TOOL_TOKENS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")
TEMPLATE_CHOICES = ("auto", "keep", TOOL_TEMPLATE_NAME)


def trl_chat_template(name: str = TOOL_TEMPLATE_NAME) -> str:
    """The text of a chat template bundled with the installed TRL (``trl/chat_templates/<name>.jinja``).

    Read exactly as TRL reads it, so the string compares equal to TRL's own copy.
    """
    path = resources.files("trl").joinpath("chat_templates", f"{name}.jinja")
    if not path.is_file():
        raise FileNotFoundError(
            f"the installed trl has no bundled chat template {name!r} ({path}); seal_hub expects trl==1.16.0, "
            "reinstall it with `pip install -e .`"
        )
    return path.read_text(encoding="utf-8")


def tool_chat_template() -> str:
    """The tool-capable template seal_hub installs: TRL's ``qwen2_5`` (ChatML + hermes tool calls)."""
    return trl_chat_template(TOOL_TEMPLATE_NAME)


def is_trl_tool_template(chat_template: str | None) -> bool:
    """Whether TRL recognises `chat_template` for tool calling (TRL's own exact-match check, side-effect free)."""
    if not isinstance(chat_template, str):
        return False
    from trl.chat_template_utils import add_response_schema

    probe = SimpleNamespace(chat_template=chat_template)  # stands in for a tokenizer; only this copy is changed
    try:
        add_response_schema(probe)
    except ValueError:
        return False
    return True


def ensure_tool_template(
    tokenizer: PreTrainedTokenizerBase, model: PreTrainedModel | None = None, mode: str = "auto"
) -> bool:
    """Make `tokenizer` carry a tool-capable template TRL accepts; returns whether the template was replaced.

    `mode`: ``"auto"`` keeps a template TRL recognises and installs TRL's ``qwen2_5`` otherwise; ``"keep"``
    never touches it; ``"qwen2_5"`` always installs it. When ChatML tokens have to be added, `model` (if
    given) gets its embeddings resized to the new vocabulary; without `model` that is the caller's job.
    """
    if mode not in TEMPLATE_CHOICES:
        raise ValueError(f"chat_template={mode!r} is not one of {TEMPLATE_CHOICES}")
    if mode == "keep" or (mode == "auto" and is_trl_tool_template(tokenizer.chat_template)):
        return False
    if mode == "auto":
        logger.warning(
            "the chat template of %s is not one TRL can parse tool calls with; installing TRL's %s template "
            "(ChatML + hermes tool calls). Set chat_template='keep' to keep the original.",
            tokenizer.name_or_path or "the tokenizer",
            TOOL_TEMPLATE_NAME,
        )
    added = _add_chatml_tokens(tokenizer)
    tokenizer.chat_template = tool_chat_template()
    if model is not None:
        if added and model.get_input_embeddings().num_embeddings < len(tokenizer):
            model.resize_token_embeddings(len(tokenizer))
        _sync_end_of_turn(model, tokenizer)
    return True


def _add_chatml_tokens(tokenizer: PreTrainedTokenizerBase) -> int:
    """Add the ChatML markers (special) the vocabulary lacks and make ``<|im_end|>`` the eos token."""
    vocab = tokenizer.get_vocab()
    missing = [token for token in CHATML_SPECIAL_TOKENS if token not in vocab]
    added = 0
    if missing:
        logger.warning(
            "adding %s to the vocabulary of %s: their embeddings start untrained", missing, tokenizer.name_or_path
        )
        added = tokenizer.add_tokens(missing, special_tokens=True)
    tokenizer.eos_token = "<|im_end|>"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return added


def _sync_end_of_turn(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> None:
    """Let generation stop at ``<|im_end|>`` as well as at the model's own end tokens."""
    end_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
    generation_config = getattr(model, "generation_config", None)
    if generation_config is None:
        return
    eos: Any = generation_config.eos_token_id
    eos_ids = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)
    if end_id not in eos_ids:
        generation_config.eos_token_id = [end_id, *eos_ids]
    if generation_config.pad_token_id is None:
        generation_config.pad_token_id = tokenizer.pad_token_id
