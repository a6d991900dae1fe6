"""Loading published artifacts by reference: the same call for the local registry and the Hub.

`load_interface("alice/run1-env@v3")` returns the `InterfaceSnapshot`, `load_trajectories(ref)` a
`datasets.Dataset` (configuration ``trajectories`` or ``diagnoses``, read through the card's ``configs:`` with
`datasets.load_dataset`), `load_adapter(ref)` a `peft.PeftModel` on its base model, the base loaded with
`seal_hub.models.load_policy` (the same tokenizer-template and embedding handling as in training). References
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

from seal_hub.hub.registry import HubError, Ref, RepoType, registry_for, with_type

if TYPE_CHECKING:
    from datasets import Dataset
    from peft import PeftModel

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
    """The base model id (and revision) an adapter folder names: card metadata first, then adapter_config.json."""
    from seal_hub.hub.artifacts import ADAPTER_CONFIG
    from seal_hub.hub.cards import card_metadata
    from seal_hub.models import parse_model_id

    config_path = folder / ADAPTER_CONFIG
    if not config_path.is_file():
        raise HubError(f"{folder}: no {ADAPTER_CONFIG}; is it an adapter repository?")
    config = json.loads(config_path.read_text(encoding="utf-8"))
    readme = folder / "README.md"
    card = card_metadata(readme.read_text(encoding="utf-8")) if readme.is_file() else {}
    base = card.get("base_model") or config.get("base_model_name_or_path")
    if not base:
        raise HubError(f"{folder}: neither the card nor {ADAPTER_CONFIG} names the base model; pass base=...")
    repo_id, revision = parse_model_id(base)
    return repo_id, revision or config.get("revision")


def load_adapter(
    ref: str | Ref, *, base: PolicyConfig | str | None = None, trainable: bool = False, **policy: Any
) -> PeftModel:
    """A `PeftModel`: the adapter at `ref` on its base model.

    `base` overrides the base: a `PolicyConfig`, or a model id / local path (default: the one the adapter names).
    Other keyword arguments go to `PolicyConfig` (e.g. ``dtype="bfloat16"``, ``load_in_4bit=True``).
    """
    from peft import PeftModel

    from seal_hub.models import PolicyConfig, load_policy

    folder = fetch(ref, "model")
    if isinstance(base, PolicyConfig):
        config = base
    else:
        repo_id, revision = (base, None) if base is not None else adapter_base(folder)
        pinned = {"model_revision": revision} if revision else {}
        config = PolicyConfig(model_name_or_path=repo_id, **pinned, **policy)
    model, _tokenizer = load_policy(config)
    return PeftModel.from_pretrained(model, str(folder), is_trainable=trainable)
