"""The tokens that end a model's turn: every id generation must stop on, and the one the chat template writes.

Models name more than one end token. Qwen2.5-Instruct's generation_config.json stops on ``<|im_end|>`` and
``<|endoftext|>``; Llama-3.1-Instruct's on ``<|end_of_text|>``, ``<|eom_id|>`` and ``<|eot_id|>``; the tokenizer's
``eos_token`` is only one of them. A generation that ends on another one must stop there too (as
`model.generate` stops), or it runs on to its token limit past the end of the model's turn. `end_token_ids`
is the one place that decides the set, for every backend that generates (batched HF, reference, vLLM): the
union of the generation config's ``eos_token_id`` (an int or a list), the tokenizer's eos token and the chat
template's end-of-turn token.

`template_end_of_turn` finds the chat template's end-of-turn token by rendering a two-message conversation
and reading the added token that follows the assistant's text (``<|im_end|>`` for ChatML, ``<|eot_id|>`` for
Llama 3). It is what the rollout engine cuts a rendered conversation at; it may differ from ``eos_token`` (a
base model's tokenizer with an instruct template).

Not covered: stop *strings* (text that is not one token); a template whose assistant turn ends without a
special token gives None, and callers fall back to the tokenizer's eos token.
"""

from __future__ import annotations

from typing import Any

_PROBE_TEXT = "seal_end_probe_7c1d"  # assistant text the end-of-turn probe looks for in the rendering


def _as_ids(value: Any) -> list[int]:
    """A generation config's eos_token_id (None, an int, or a list of ints) as a list."""
    if value is None:
        return []
    if isinstance(value, int):
        return [value]
    return [int(i) for i in value]


def template_end_of_turn(tokenizer) -> str | None:
    """The added token the chat template writes right after an assistant message, or None if there is none
    (no template, a template that fails on a plain user/assistant exchange, or plain text after the message)."""
    if not isinstance(getattr(tokenizer, "chat_template", None), str):
        return None
    messages = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": _PROBE_TEXT}]
    try:
        text = tokenizer.apply_chat_template(messages, tokenize=False)
    except Exception:  # noqa: BLE001 - any template error means: no end-of-turn token can be read from it
        return None
    if not isinstance(text, str) or _PROBE_TEXT not in text:
        return None
    after = text[text.rindex(_PROBE_TEXT) + len(_PROBE_TEXT) :].lstrip(" \t\r\n")
    for token in sorted(tokenizer.get_added_vocab(), key=len, reverse=True):
        if token and after.startswith(token):
            return token
    return None


def end_token_ids(model_or_config, tokenizer) -> tuple[int, ...]:
    """Every token id that ends the model's turn (sorted): the generation config's eos ids, the tokenizer's eos
    and the chat template's end-of-turn token.

    `model_or_config`: a model (its ``generation_config`` is read; PEFT wrappers forward it), a
    `transformers.GenerationConfig`, or None (only the tokenizer's tokens).
    """
    config = getattr(model_or_config, "generation_config", model_or_config)
    ids = set(_as_ids(getattr(config, "eos_token_id", None)))
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    end_of_turn = template_end_of_turn(tokenizer)
    if end_of_turn is not None:
        ids.add(int(tokenizer.convert_tokens_to_ids(end_of_turn)))
    if not ids:
        raise ValueError(
            "no end-of-turn token: the model's generation_config has no eos_token_id, the tokenizer no eos_token "
            "and the chat template ends assistant turns with no special token; set tokenizer.eos_token"
        )
    return tuple(sorted(ids))
