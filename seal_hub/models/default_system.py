"""The system prompt a chat template writes when a conversation has none of its own.

Qwen2.5's template (the one TRL bundles, and the one seal_hub installs on a policy whose own template TRL cannot
parse) opens every conversation without a system message with "You are Qwen, created by Alibaba Cloud. You are a
helpful assistant."; SmolLM2's own template with "You are a helpful AI assistant named SmolLM, trained by Hugging
Face". A conversation that brings a system message replaces that line. SEAL's interface speaks through a system
message (its schema note and guidelines), so without care the first interface that says anything would also take
away the line every earlier prompt began with: the warm-up's conversations, plain GRPO's rollouts and every
held-out evaluation (null interface, no system message). `template_default_system` reads that line from the
template, so the rollout engine can keep it and add the interface's text after it
(`seal_hub.rollout.engine.first_messages`).

It renders a user message with and without a probe system message and takes what the template writes in the
probe's place. A template that writes nothing there (Llama 3.1's date header is written either way, around an
empty system text) or fails on the probe gives None.
"""

from __future__ import annotations

_PROBE_SYSTEM = "seal_system_probe_5e2a"
_PROBE_USER = [{"role": "user", "content": "seal_user_probe_9b4f"}]


def template_default_system(tokenizer) -> str | None:
    """The text the tokenizer's chat template puts in the system turn of a conversation without a system message,
    or None (no template, nothing written there, or a template the probe fails on)."""
    if not isinstance(getattr(tokenizer, "chat_template", None), str):
        return None
    try:
        without = tokenizer.apply_chat_template(_PROBE_USER, tokenize=False)
        probed = [{"role": "system", "content": _PROBE_SYSTEM}, *_PROBE_USER]
        with_system = tokenizer.apply_chat_template(probed, tokenize=False)
    except Exception:  # noqa: BLE001 - any template error means: no default can be read from it
        return None
    if not (isinstance(without, str) and isinstance(with_system, str)) or with_system.count(_PROBE_SYSTEM) != 1:
        return None
    head, _, tail = with_system.partition(_PROBE_SYSTEM)
    if len(without) < len(head) + len(tail) or not (without.startswith(head) and without.endswith(tail)):
        return None
    return without[len(head) : len(without) - len(tail)].strip() or None
