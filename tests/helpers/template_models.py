"""Tiny policies with other chat templates: the tiny Qwen2 model re-dressed as Llama-3.1 or as a pythonic-call model.

Built from `seal_hub.models.tiny` (its BFCL-trained tokenizer and random Qwen2 weights): the Llama variant adds
Llama 3's special tokens, takes TRL's bundled ``llama3_1`` template (read from the installed TRL, as
`seal_hub.models.chat_templates` reads ``qwen2_5``) and names ``<|end_of_text|>``, ``<|eom_id|>`` and
``<|eot_id|>`` as end tokens in its generation config, as Meta-Llama-3.1-8B-Instruct does.
"""

from __future__ import annotations

from pathlib import Path

from tokenizers import AddedToken
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

from seal_hub.models.chat_templates import trl_chat_template
from seal_hub.models.tiny import build_tiny_model

LLAMA_SPECIAL = (
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|python_tag|>",
)
LLAMA_END_TOKENS = ("<|end_of_text|>", "<|eom_id|>", "<|eot_id|>")

# A ToolACE-like template: tools listed in the system turn, calls written as a pythonic list.
PYTHONIC_TEMPLATE = (
    "{% if tools %}<|im_start|>system\nTools:\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}"
    "Call them as [func(arg=value)].<|im_end|>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.tool_calls %}[{% for c in m.tool_calls %}{{ c.function.name }}("
    "{% for k, v in c.function.arguments.items() %}{{ k }}={{ v | tojson }}{% if not loop.last %}, {% endif %}"
    "{% endfor %}){% if not loop.last %}, {% endif %}{% endfor %}]"
    "{% else %}{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def load(path: Path):
    return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)


def build_tiny_llama(out_dir: Path) -> Path:
    """The tiny model with Llama 3's special tokens, TRL's llama3_1 template and Llama-3.1's three end tokens."""
    build_tiny_model(out_dir)
    model, tokenizer = load(out_dir)
    tokenizer.add_tokens([AddedToken(token, special=True, normalized=False) for token in LLAMA_SPECIAL])
    tokenizer.bos_token, tokenizer.eos_token = "<|begin_of_text|>", "<|eot_id|>"
    tokenizer.pad_token = "<|end_of_text|>"
    tokenizer.chat_template = trl_chat_template("llama3_1")
    if model.get_input_embeddings().num_embeddings < len(tokenizer):
        model.resize_token_embeddings(len(tokenizer))
    ids = tokenizer.convert_tokens_to_ids(list(LLAMA_END_TOKENS))
    model.generation_config = GenerationConfig(eos_token_id=ids, pad_token_id=tokenizer.pad_token_id)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir
