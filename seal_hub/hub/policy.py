"""What a published policy version holds: a PEFT adapter (LoRA runs) or the whole model (full fine-tunes).

A run's policy artifact is the model half of a checkpoint, what `Trainer.save_model` wrote there. Its kind follows
the files, as PEFT and transformers tell them apart: ``adapter_config.json`` makes an adapter (``adapter_model.*``
with the tokenizer), ``config.json`` without it a full model (``config.json``, ``generation_config.json``,
``model.safetensors`` or its shards with ``model.safetensors.index.json``, the tokenizer files and chat template),
which `AutoModelForCausalLM.from_pretrained` loads by itself. `policy_files` lists what to publish from such a
folder and nothing else (never ``training_args.bin``, which names this machine's paths, nor optimizer state), and
refuses a folder without weights: under DeepSpeed ZeRO-3, ``save_model`` writes consolidated weights only with
``zero3_save_16bit_model: true`` (DeepSpeed's ``stage3_gather_16bit_weights_on_model_save``), else just DeepSpeed's
shards in ``global_step*/``. `load_weights` puts a published full model's weights into a loaded model of the same
architecture (the base it was fine-tuned from), as `seal_hub.hub.sources.attach_policy` does for adapters.

Not covered: converting DeepSpeed shards (``zero_to_fp32.py``), merging adapters, or publishing (`artifacts.py`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

PolicyKind = Literal["adapter", "full"]

ADAPTER_CONFIG = "adapter_config.json"
MODEL_CONFIG = "config.json"
WEIGHTS_INDEX = "model.safetensors.index.json"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json")
# what a published adapter holds: PEFT's files and the tokenizer with its tool-capable chat template
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors", *TOKENIZER_FILES)
# what a published full model holds besides its weights: the configs and the tokenizer files save_model writes
MODEL_FILES = (
    MODEL_CONFIG,
    "generation_config.json",
    *TOKENIZER_FILES,
    "vocab.json",
    "merges.txt",
    "added_tokens.json",
    "tokenizer.model",
)
ZERO3_HINT = (
    "under DeepSpeed ZeRO-3, save_model writes consolidated weights only with zero3_save_16bit_model: true in the "
    "accelerate config (DeepSpeed's stage3_gather_16bit_weights_on_model_save; recipes/accelerate/zero3.yaml sets "
    "it); without it the checkpoint holds DeepSpeed's shards only (recover them with the zero_to_fp32.py there)"
)


class MissingWeightsError(FileNotFoundError):
    """A policy folder whose weights are missing: nothing to publish or load."""


def policy_kind(folder: str | Path) -> PolicyKind:
    """'adapter' for a PEFT folder, 'full' for a transformers model folder; else `FileNotFoundError`."""
    folder = Path(folder)
    if (folder / ADAPTER_CONFIG).is_file():
        return "adapter"
    if (folder / MODEL_CONFIG).is_file():
        return "full"
    raise FileNotFoundError(
        f"{folder} has neither {ADAPTER_CONFIG} (a PEFT adapter) nor {MODEL_CONFIG} (a full model): give the folder "
        "save_model (or save_pretrained) wrote"
    )


def weight_files(folder: str | Path) -> list[str]:
    """A full model's weight files (the shards its index names, else the single file); `MissingWeightsError`."""
    folder = Path(folder)
    index = folder / WEIGHTS_INDEX
    if index.is_file():
        shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
        missing = [name for name in shards if not (folder / name).is_file()]
        if missing:
            raise MissingWeightsError(f"{folder}: {WEIGHTS_INDEX} names {len(missing)} missing shards: {missing[:3]}")
        return [WEIGHTS_INDEX, *shards]
    if (folder / "model.safetensors").is_file():
        return ["model.safetensors"]
    shards = " (only DeepSpeed's shards, in global_step*/)" if list(folder.glob("global_step*")) else ""
    raise MissingWeightsError(
        f"{folder} has {MODEL_CONFIG} but no consolidated weights (model.safetensors or {WEIGHTS_INDEX}){shards}: "
        + ZERO3_HINT
    )


def policy_files(folder: str | Path) -> tuple[PolicyKind, list[str]]:
    """The policy's kind and the files of `folder` that make its published version (names relative to it)."""
    folder = Path(folder)
    kind = policy_kind(folder)
    if kind == "adapter":
        if not (folder / "adapter_model.safetensors").is_file():
            raise MissingWeightsError(f"{folder} has {ADAPTER_CONFIG} but no adapter_model.safetensors: " + ZERO3_HINT)
        return kind, [name for name in ADAPTER_FILES if (folder / name).is_file()]
    weights = weight_files(folder)
    return kind, [name for name in MODEL_FILES if (folder / name).is_file()] + weights


def load_weights(model: Any, folder: str | Path) -> None:
    """Load the full model in `folder` into `model` (same architecture and shapes), in place; `ValueError` naming
    the first mismatch otherwise. Tied parameters (``lm_head`` sharing the embedding) come with what they share."""
    from safetensors.torch import load_file

    folder = Path(folder)
    loaded: set[str] = set()
    for name in weight_files(folder):
        if name == WEIGHTS_INDEX:
            continue
        part = load_file(str(folder / name))
        result = model.load_state_dict(part, strict=False)
        if result.unexpected_keys:
            raise ValueError(f"{name} has parameters this model lacks: {result.unexpected_keys[:3]}")
        loaded.update(part)
    state = model.state_dict()
    shared = {state[key].data_ptr() for key in loaded}
    missing = [key for key in state if key not in loaded and state[key].data_ptr() not in shared]
    if missing:
        raise ValueError(f"{folder} lacks parameters this model has: {missing[:3]}")
