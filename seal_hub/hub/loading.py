"""Loading published artifacts by reference: the same call for the local registry and the Hub.

`load_interface("alice/run1-env@v3")` returns the `InterfaceSnapshot` (so does a snapshot JSON file's path),
`load_trajectories(ref)` a `datasets.Dataset` (configuration ``trajectories`` or ``diagnoses``, read through the
card's ``configs:`` with `datasets.load_dataset`), `load_adapter(ref)` a `peft.PeftModel` on its base model, the base
loaded with
`seal_hub.models.load_policy` (the same tokenizer-template and embedding handling as in training), and
`load_model(ref)` any published policy: that `PeftModel` for an adapter, the model itself (``AutoModelForCausalLM``
through `load_policy`) for a full fine-tune's version (`seal_hub.hub.policy`). Both read the folder with
`seal_hub.hub.policy.read_policy` and load it with `load_policy_version`, the one policy loader (an adapter goes on
its base through `seal_hub.hub.sources.attach_policy`, the one place PEFT loads one). References
follow `seal_hub.hub.registry` (``local://`` or ``hf://`` pick the backend; a missing type defaults to the
artifact's own: dataset for the first two, model for adapters).

`fetch(ref)` gives the local folder with a revision's files, from either backend; the other functions build on it.
A missing repository or revision fails with a `HubError` naming the reference and the versions there are.

Not covered: publishing (`seal_hub.hub.artifacts`), and merging adapters into their base.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seal_hub.hub.backends import registry_for
from seal_hub.hub.policy import PublishedPolicy, read_policy
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


def load_interface(ref: str | Ref | Path) -> InterfaceSnapshot:
    """The interface snapshot published at `ref` (e.g. ``"alice/run1-env@v3"``), or in a snapshot JSON file: the one
    interface loader of the commands (`seal-hub eval --interface`, `seal-hub interface show | diff`) and the Space."""
    from seal_hub.hub.sources import read_interface
    from seal_hub.interface import load_snapshot

    if isinstance(ref, Path) or (isinstance(ref, str) and (Path(ref).exists() or ref.endswith(".json"))):
        return load_snapshot(ref)
    return read_interface(fetch(ref, "dataset"), str(ref))


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


def load_policy_version(
    policy: PublishedPolicy, *, base: PolicyConfig | str | None = None, trainable: bool = False, **options: Any
) -> tuple[Any, Any]:
    """(model, tokenizer) of a policy folder read with `read_policy`: the one policy loader that `load_adapter`,
    `load_model`, the Space (`seal_hub.replay.policies.load_named`) and the experiment's evaluation call.

    A full fine-tune's model loads by itself (`base`, a `PolicyConfig`, lends it its loading options); an adapter
    goes on its base, loaded with `seal_hub.models.load_policy` (the same tokenizer-template and embedding handling
    as in training): `base` (a `PolicyConfig`, or a model id / local path), else the one the policy names, through
    `seal_hub.hub.sources.attach_policy`. `options` go to `PolicyConfig` (e.g. ``dtype="bfloat16"``,
    ``load_in_4bit=True``); frozen and in eval mode unless `trainable`."""
    from dataclasses import replace

    from seal_hub.hub.sources import attach_policy
    from seal_hub.models import PolicyConfig, load_policy

    if policy.kind == "full":
        config = (
            replace(base, model_name_or_path=str(policy.folder))
            if isinstance(base, PolicyConfig)
            else PolicyConfig(model_name_or_path=str(policy.folder), **options)
        )
        model, tokenizer = load_policy(config)
        model.requires_grad_(trainable)  # as PEFT's is_trainable: frozen and in eval mode unless asked
        return model.train(trainable), tokenizer
    if isinstance(base, PolicyConfig):
        config = base
    else:
        repo_id, revision = (base, None) if base is not None else (policy.base_model, policy.base_revision)
        pinned = {"model_revision": revision} if revision else {}
        config = PolicyConfig(model_name_or_path=repo_id, **pinned, **options)
    model, tokenizer = load_policy(config)
    return attach_policy(model, policy, trainable=trainable), tokenizer


def load_adapter(
    ref: str | Ref, *, base: PolicyConfig | str | None = None, trainable: bool = False, **policy: Any
) -> PeftModel:
    """A `PeftModel`: the adapter at `ref` on its base model.

    `base` overrides the base: a `PolicyConfig`, or a model id / local path (default: the one the adapter names).
    Other keyword arguments go to `PolicyConfig` (e.g. ``dtype="bfloat16"``, ``load_in_4bit=True``). A full
    fine-tune's version has no adapter: `load_model` loads it.
    """
    named = base if isinstance(base, str) else getattr(base, "model_name_or_path", None)
    published = read_policy(fetch(ref, "model"), str(ref), base=named)
    if published.kind == "full":
        raise HubError(f"{ref} holds a full fine-tune (the whole model), not an adapter: seal_hub.load_model({ref!r})")
    return load_policy_version(published, base=base, trainable=trainable, **policy)[0]


def load_model(ref: str | Ref, *, trainable: bool = False, **policy: Any) -> PeftModel | PreTrainedModel:
    """The policy published at `ref`, either kind: an adapter on its base (as `load_adapter`), or a full
    fine-tune's model loaded by itself. Keyword arguments go to `PolicyConfig` (e.g. ``dtype="bfloat16"``)."""
    return load_policy_version(read_policy(fetch(ref, "model"), str(ref)), trainable=trainable, **policy)[0]
