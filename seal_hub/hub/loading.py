"""Loading published artifacts by reference: the same call for the local registry and the Hub.

`load_interface("alice/run1-env@v3")` returns the `InterfaceSnapshot`, `load_trajectories(ref)` a
`datasets.Dataset` (configuration ``trajectories`` or ``diagnoses``, read through the card's ``configs:`` with
`datasets.load_dataset`), `load_adapter(ref)` a `peft.PeftModel` on its base model, the base loaded with
`seal_hub.models.load_policy` (the same tokenizer-template and embedding handling as in training), and
`load_model(ref)` any published policy: that `PeftModel` for an adapter, the model itself (``AutoModelForCausalLM``
through `load_policy`) for a full fine-tune's version (`seal_hub.hub.policy`). References
follow `seal_hub.hub.registry` (``local://`` or ``hf://`` pick the backend; a missing type defaults to the
artifact's own: dataset for the first two, model for adapters).

`fetch(ref)` gives the local folder with a revision's files, from either backend; the other functions build on it.
A missing repository or revision fails with a `HubError` naming the reference and the versions there are.

Not covered: publishing (`seal_hub.hub.artifacts`), and merging adapters into their base.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seal_hub.hub.backends import registry_for
from seal_hub.hub.registry import HubError, Ref, RepoType, with_type

if TYPE_CHECKING:
    from datasets import Dataset
    from peft import PeftModel
    from transformers import PreTrainedModel

    from seal_hub.interface import InterfaceSnapshot
    from seal_hub.models import PolicyConfig

DATA_CONFIGS = ("trajectories", "diagnoses")


def _ref(ref: str | Ref, repo_type: RepoType | None) -> Ref:
    return ref if isinstance(ref, Ref) else Ref.parse(ref, repo_type)


def fetch(ref: str | Ref, repo_type: RepoType | None = None) -> Path:
    """The local folder holding `ref`'s files at its revision (``main`` when none is given)."""
    parsed = _ref(ref, repo_type)
    registry = registry_for(parsed)
    return registry.download(with_type(parsed, registry, repo_type))


def load_interface(ref: str | Ref) -> InterfaceSnapshot:
    """The interface snapshot published at `ref`, e.g. ``"alice/run1-env@v3"``."""
    from seal_hub.hub.artifacts import INTERFACE_FILE
    from seal_hub.interface import load_snapshot

    folder = fetch(ref, "dataset")
    if not (folder / INTERFACE_FILE).is_file():
        raise HubError(f"{ref}: this revision holds no {INTERFACE_FILE}; is it an environment repository?")
    return load_snapshot(folder / INTERFACE_FILE)


def load_trajectories(ref: str | Ref, config: str = "trajectories") -> Dataset:
    """The ``train`` split of configuration `config` (``trajectories`` or ``diagnoses``) at `ref`.

    Rows of ``trajectories`` turn back into records with `seal_hub.rollout.records.from_rows(ds.to_list())`.
    """
    from datasets import load_dataset

    if config not in DATA_CONFIGS:
        raise ValueError(f"config={config!r} is not one of {DATA_CONFIGS}")
    folder = fetch(ref, "dataset")
    if not (folder / config).is_dir():
        raise HubError(f"{ref}: this revision has no {config}/ folder; is it a trajectories repository?")
    cache = os.environ.get("HF_DATASETS_CACHE")
    return load_dataset(str(folder), config, split="train", cache_dir=cache)


def adapter_base(folder: Path) -> tuple[str, str | None]:
    """The base model id (and revision) a policy folder names: card metadata first, then (adapters)
    adapter_config.json. A full fine-tune's base is the model it was fine-tuned from, which only its card names; one
    trained from a folder of this machine, by that folder's name (``seal.local_base``: `base_is_local`)."""
    from seal_hub.hub.cards import card_metadata
    from seal_hub.hub.policy import ADAPTER_CONFIG, policy_kind
    from seal_hub.models import parse_model_id

    try:
        kind = policy_kind(folder)
    except FileNotFoundError:
        raise HubError(
            f"{folder}: no {ADAPTER_CONFIG} nor config.json; is it a policy (<run>-adapter) repository?"
        ) from None
    config = json.loads((folder / ADAPTER_CONFIG).read_text(encoding="utf-8")) if kind == "adapter" else {}
    readme = folder / "README.md"
    card = card_metadata(readme.read_text(encoding="utf-8")) if readme.is_file() else {}
    base = card.get("base_model") or config.get("base_model_name_or_path") or _local_base(card)
    if not base:
        where = "the card" if kind == "full" else f"neither the card nor {ADAPTER_CONFIG}"
        raise HubError(f"{folder}: {where} names the base model; pass base=...")
    repo_id, revision = parse_model_id(base)
    return repo_id, revision or config.get("revision")


def _local_base(card: dict[str, Any]) -> str | None:
    seal = card.get("seal")
    return seal.get("local_base") if isinstance(seal, dict) else None


def base_is_local(folder: Path) -> bool:
    """Whether a policy folder's card names its base only by a local folder's name (no Hub id, no path)."""
    from seal_hub.hub.cards import card_metadata
    from seal_hub.hub.policy import ADAPTER_CONFIG

    readme = folder / "README.md"
    card = card_metadata(readme.read_text(encoding="utf-8")) if readme.is_file() else {}
    return not card.get("base_model") and not (folder / ADAPTER_CONFIG).is_file() and bool(_local_base(card))


def load_adapter(
    ref: str | Ref, *, base: PolicyConfig | str | None = None, trainable: bool = False, **policy: Any
) -> PeftModel:
    """A `PeftModel`: the adapter at `ref` on its base model.

    `base` overrides the base: a `PolicyConfig`, or a model id / local path (default: the one the adapter names).
    Other keyword arguments go to `PolicyConfig` (e.g. ``dtype="bfloat16"``, ``load_in_4bit=True``). A full
    fine-tune's version has no adapter: `load_model` loads it.
    """
    from peft import PeftModel

    from seal_hub.hub.policy import policy_kind
    from seal_hub.models import PolicyConfig, load_policy

    folder = fetch(ref, "model")
    if policy_kind(folder) == "full":
        raise HubError(f"{ref} holds a full fine-tune (the whole model), not an adapter: seal_hub.load_model({ref!r})")
    if isinstance(base, PolicyConfig):
        config = base
    else:
        repo_id, revision = (base, None) if base is not None else adapter_base(folder)
        pinned = {"model_revision": revision} if revision else {}
        config = PolicyConfig(model_name_or_path=repo_id, **pinned, **policy)
    model, _tokenizer = load_policy(config)
    return PeftModel.from_pretrained(model, str(folder), is_trainable=trainable)


def load_model(ref: str | Ref, *, trainable: bool = False, **policy: Any) -> PeftModel | PreTrainedModel:
    """The policy published at `ref`, either kind: an adapter on its base (`load_adapter`), or a full fine-tune's
    model loaded by itself. Keyword arguments go to `PolicyConfig` (e.g. ``dtype="bfloat16"``)."""
    from seal_hub.hub.policy import policy_kind
    from seal_hub.models import PolicyConfig, load_policy

    folder = fetch(ref, "model")
    try:
        kind = policy_kind(folder)
    except FileNotFoundError:
        raise HubError(f"{ref}: this revision holds no policy (adapter_config.json or config.json)") from None
    if kind == "adapter":
        return load_adapter(ref, trainable=trainable, **policy)
    model, _tokenizer = load_policy(PolicyConfig(model_name_or_path=str(folder), **policy))
    model.requires_grad_(trainable)  # as PEFT's is_trainable: frozen and in eval mode unless asked
    return model.train(trainable)
