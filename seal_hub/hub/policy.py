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

`read_policy(folder)` is the one reading of a policy folder (published, or a run's own output): a `PublishedPolicy`
with its kind from its files and its base model from what the card's metadata says (``base_model``, else
``seal.local_base``: a folder of the machine that trained it), else, for an adapter, ``adapter_config.json``. Nothing
is decided from a repository's name.

Not covered: converting DeepSpeed shards (``zero_to_fp32.py``), merging adapters, publishing (`artifacts.py`), and
loading a policy onto its base (`seal_hub.hub.sources.attach_policy`, `seal_hub.hub.loading.load_policy_version`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from seal_hub.hub.registry import HubError

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


@dataclass(frozen=True)
class PublishedPolicy:
    """A policy folder and the base model it was trained from (`read_policy`); `kind` 'adapter' (PEFT files) or
    'full' (a full fine-tune: the whole model). `local_base`: the base was a folder of the machine that trained it,
    which the card names by the folder's name alone (`base_model` is that name). `where` names it in messages (the
    source at its commit, the reference, or the folder)."""

    folder: Path
    base_model: str
    base_revision: str | None = None
    kind: PolicyKind = "adapter"
    local_base: bool = False
    where: str = ""

    @property
    def base(self) -> str:
        return self.base_model + (f"@{self.base_revision}" if self.base_revision else "")


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


def _card(folder: Path) -> dict[str, Any]:
    from seal_hub.hub.cards import card_metadata

    readme = folder / "README.md"
    return card_metadata(readme.read_text(encoding="utf-8")) if readme.is_file() else {}


def read_policy(folder: str | Path, where: str | None = None, *, base: str | None = None) -> PublishedPolicy:
    """What the policy in `folder` is (see the module docstring); `base` (a model id or path) overrides the base the
    folder names. A folder without policy files, or an adapter naming no base, is a one-line `HubError`."""
    from seal_hub.models.config import parse_model_id

    folder = Path(folder)
    where = where or str(folder)
    try:
        kind = policy_kind(folder)
    except FileNotFoundError:
        raise HubError(
            f"{where}: this revision holds no {ADAPTER_CONFIG} nor {MODEL_CONFIG}; is it a policy (<run>-adapter) "
            "repository?"
        ) from None
    if base is not None:
        return PublishedPolicy(folder, *parse_model_id(base), kind, where=where)
    config = json.loads((folder / ADAPTER_CONFIG).read_text(encoding="utf-8")) if kind == "adapter" else {}
    card = _card(folder)
    seal = card.get("seal") if isinstance(card.get("seal"), dict) else {}
    local_base = seal.get("local_base") if not card.get("base_model") and kind == "full" else None
    named = card.get("base_model") or config.get("base_model_name_or_path") or seal.get("local_base")
    if not named:
        if kind == "full":  # a whole model loads by itself: its base only matters to check_base_model
            return PublishedPolicy(folder, "", None, kind, where=where)
        raise HubError(f"{where}: neither the card nor {ADAPTER_CONFIG} names the base model; pass base=...")
    repo_id, revision = parse_model_id(named)
    return PublishedPolicy(folder, repo_id, revision or config.get("revision"), kind, bool(local_base), where)
