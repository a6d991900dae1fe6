"""Cards (README.md with YAML front matter) for the three artifacts, from the Jinja templates the package ships.

Each card's metadata is built with `huggingface_hub`'s card-data classes (`ModelCardData`, `DatasetCardData`,
`EvalResult`), so the YAML is what the Hub expects (``model-index`` from evaluation results, ``configs`` for the
dataset's two configurations), and the body comes from a Jinja template in the top-level ``model_cards/``
(``adapter``, ``model``: the policy card of a full fine-tune, ``dataset``, ``environment``, ``evaluation``), which
the wheel ships inside the package (`seal_hub.shipped`), so an installed wheel finds them as a checkout does. Every
card links the other two artifacts at the matching revision, as `repo@revision` and as a Hub URL
(``https://huggingface.co``: a card describes the published artifact, and stays byte-identical when a local version
is synced to the Hub).

Design choice: cards are built only from the arguments given here (ids, revisions, numbers, the snapshot), never
from the environment, so no token or local path can slip into one unless passed in on purpose; a base model given as
a folder of this machine is named by its folder's name (`card_base`), never by its path.

`correct_training_card` is the one card written outside a registry: the README.md TRL and PEFT leave in a training
folder, corrected in place (the trainer calls it after each save), so pushing that folder publishes no host path.

Not covered: writing or pushing the registry's cards (`seal_hub.hub.artifacts`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seal_hub.envs.suite import SuiteCard
from seal_hub.hub.registry import RepoType
from seal_hub.shipped import MODEL_CARDS, shipped

HUB_URL = "https://huggingface.co"
CARD_TAGS = ("seal", "trl", "grpo", "tool-use")
DATA_CONFIGS = ("trajectories", "diagnoses")


def template(kind: str) -> str:
    """The Jinja template of one kind of card: ``adapter``, ``model``, ``dataset``, ``environment``, ``evaluation``."""
    return (shipped(MODEL_CARDS, f"{kind}.md") / f"{kind}.md").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Link:
    """One linked artifact at one revision, as a card shows it."""

    role: str  # "trajectories", "environment", "adapter"
    repo_id: str
    repo_type: RepoType
    revision: str

    @property
    def ref(self) -> str:
        return f"{self.repo_id}@{self.revision}"

    @property
    def url(self) -> str:
        prefix = "datasets/" if self.repo_type == "dataset" else ""
        return f"{HUB_URL}/{prefix}{self.repo_id}/tree/{self.revision}"


def _is_path(name: str) -> bool:
    return name.startswith(("/", ".", "~")) or Path(name).expanduser().exists()


def published_base(base_model: str) -> tuple[str, str | None]:
    """How a card names the model a policy was trained from, and the weights it really used: a converted local
    stand-in (the offline demo model, ``seal_hub_conversion.json`` beside it) is named by the Hub id it stands in
    for; anything else as given."""
    note_path = Path(base_model).expanduser() / "seal_hub_conversion.json"
    if not note_path.is_file():
        return base_model, None
    note = json.loads(note_path.read_text(encoding="utf-8"))
    if not note.get("stands_in_for"):
        return base_model, None
    weights = f"{note.get('weights', 'converted')} ({note.get('gguf_file')}, {note.get('package')})"
    return note["stands_in_for"], weights


def card_base(base_model: str) -> tuple[str, str | None]:
    """How a card names the model a policy was trained from: (the name it shows, its Hub id or None). A Hub id as
    given; a converted local stand-in by the Hub id it stands in for (`published_base`); any other folder of this
    machine by its folder's name alone (no Hub id: the card's ``base_model`` stays unset), never by its path."""
    named = published_base(base_model)[0]
    if _is_path(named):
        return Path(named).expanduser().resolve().name or "a local model", None
    return named, named


TRL_UNKNOWN_BASE = "[None](https://huggingface.co/None)"  # TRL's card when the base model is a local folder
TRL_UNKNOWN_MODEL = 'model="None"'  # TRL's quick start without a hub_model_id (transformers' push, not used here)


def correct_training_card(folder: str | Path, base_model: str | None, policy: str | None = None) -> None:
    """Make the README.md that TRL (`create_model_card`) and PEFT (`save_pretrained`) write into a training folder
    (the output dir, each checkpoint) say what it should: TRL's placeholder ``licence: license`` goes, and the base
    model is its Hub id (a converted stand-in's: `card_base`) or, for a model only on this machine, named as "a
    local model `<folder name>`", never by its path: in ``base_model``, in PEFT's ``base_model:adapter:...`` tag and
    in TRL's "fine-tuned version of [None](https://huggingface.co/None)". TRL's quick start loads `policy` (the
    run's published policy repository) instead of ``model="None"``, or this folder when nothing is published. No
    README.md there: nothing to do."""
    from huggingface_hub import ModelCard, ModelCardData

    path = Path(folder) / "README.md"
    if not path.is_file():
        return
    card = ModelCard(path.read_text(encoding="utf-8"))
    named = published_base(base_model)[0] if base_model else None
    shown, hub_id = card_base(base_model) if base_model else ("", None)
    data = card.data.to_dict()
    written = data.get("base_model") if isinstance(data.get("base_model"), str) else None  # PEFT's: the config's
    if not shown and written:
        shown = card_base(written)[0]
    local = {str(p) for p in (base_model, named, written) if p and _is_path(p)}
    local |= {str(Path(p).expanduser().resolve()) for p in local}
    local_name = f"a local model `{shown}`" if shown else "a local model"
    data.pop("licence", None)  # TRL's `licence="license"`: a placeholder, not the model's licence
    data.pop("base_model", None)
    if hub_id:
        data["base_model"] = hub_id
    tags = []
    for tag in data.get("tags") or []:
        found = sorted((p for p in local if p in tag), key=len, reverse=True)
        if found and not hub_id:
            continue
        tags.append(tag.replace(found[0], hub_id) if found else tag)
    if "tags" in data:
        data["tags"] = list(dict.fromkeys(tags))
    body = card.text.replace(TRL_UNKNOWN_BASE, f"[{hub_id}]({HUB_URL}/{hub_id})" if hub_id else local_name)
    for place in sorted(local, key=len, reverse=True):
        body = body.replace(place, hub_id or local_name)
    body = body.replace(TRL_UNKNOWN_MODEL, f'model="{policy}"' if policy else 'model="path/to/this/folder"')
    card.data, card.text = ModelCardData(**data), body
    path.write_text(str(card), encoding="utf-8")


@dataclass(frozen=True)
class EvalScore:
    """One evaluation result for an adapter card's model-index (default: BFCL v3 multi-turn, test split)."""

    metric: str
    value: float
    name: str | None = None
    dataset: str = "bfcl_v3_multi_turn"
    dataset_name: str = "BFCL v3 multi-turn"
    split: str | None = "test"


def _render(kind: str, card_data: Any, **context: Any) -> str:
    from huggingface_hub import DatasetCard, ModelCard

    card_class = ModelCard if kind in ("adapter", "model") else DatasetCard
    card = card_class.from_template(card_data, template_str=template(kind), **context)
    return str(card).rstrip() + "\n"


def _seal_metadata(links: Sequence[Link], derived_from: Sequence[Any] = (), **extra: Any) -> dict[str, Any]:
    data = {key: value for key, value in extra.items() if value is not None}
    data.update({link.role: link.ref for link in links})
    if derived_from:  # `seal_hub.hub.sources.Source` records: the published artifacts the run started from
        data["derived_from"] = [
            {"role": s.role, "ref": s.ref, "commit": s.commit, "backend": s.backend} for s in derived_from
        ]
    return data


def task_name(dataset_type: str) -> str:
    """The model-index task an evaluation dataset measures: the task of the built-in suite whose card names that
    dataset (`Suite.card`), else multi-turn tool use."""
    from seal_hub.envs.builtin import SUITES, suite_card

    cards = [suite_card(name) for name in SUITES]
    default = SuiteCard.plain(dataset_type).task_name
    return next((card.task_name for card in cards if card.dataset_type == dataset_type), default)


def adapter_card(
    repo_id: str,
    tag: str,
    *,
    base_model: str,
    links: Sequence[Link],
    iteration: int | None = None,
    results: Sequence[EvalScore] = (),
    base_weights: str | None = None,
    derived_from: Sequence[Any] = (),
    kind: str = "adapter",
) -> str:
    """The policy's README: the datasets, the environment version, model-index when scored, and, by `kind`, PEFT
    metadata (``"adapter"``) or a full fine-tune's (``"full"``: ``library_name: transformers``,
    ``base_model_relation: finetune``, tag ``full-fine-tune``; body from ``model.md``). A base model only on this
    machine (`card_base`) leaves ``base_model`` unset and is named by its folder's name (``seal.local_base``)."""
    if kind not in ("adapter", "full"):
        raise ValueError(f"kind={kind!r} is not 'adapter' or 'full'")
    from huggingface_hub import EvalResult, ModelCardData

    environment = next((link.ref for link in links if link.role == "environment"), "(not recorded)")
    evals = [
        EvalResult(
            task_type="text-generation",
            task_name=task_name(r.dataset),
            dataset_type=r.dataset,
            dataset_name=r.dataset_name,
            dataset_split=r.split,
            metric_type=r.metric,
            metric_value=r.value,
            metric_name=r.name,
        )
        for r in results
    ]
    full = kind == "full"
    shown, hub_id = card_base(base_model)
    data = ModelCardData(
        base_model=hub_id,
        base_model_relation="finetune" if full else None,
        library_name="transformers" if full else "peft",
        pipeline_tag="text-generation",
        tags=[*CARD_TAGS, "full-fine-tune" if full else "lora"],
        datasets=[link.repo_id for link in links if link.role == "trajectories"] or None,
        model_name=repo_id if evals else None,
        eval_results=evals or None,
        seal=_seal_metadata(
            links,
            derived_from,
            iteration=iteration,
            revision=tag,
            base_weights=base_weights,
            local_base=None if hub_id else shown,
        ),
    )
    base_url = f"{HUB_URL}/{hub_id}" if hub_id else None
    ref = f"hf://{repo_id}@{tag}"
    return _render(
        "model" if full else "adapter",
        data,
        repo_id=repo_id,
        tag=tag,
        ref=ref,
        base_model=shown,
        base_model_url=base_url,
        base_weights=base_weights,
        iteration=iteration,
        links=list(links),
        results=evals,
        environment=environment,
        derived_from=list(derived_from),
    )


def dataset_card(
    repo_id: str,
    tag: str,
    *,
    iterations: Sequence[str],
    rollouts: int,
    mean_reward: float,
    links: Sequence[Link],
    iteration: int | None = None,
    derived_from: Sequence[Any] = (),
) -> str:
    """The trajectories dataset's README: the two configurations, the iterations it holds, the links."""
    from huggingface_hub import DatasetCardData

    configs = [
        {"config_name": name, "data_files": [{"split": "train", "path": f"{name}/*.parquet"}]}
        | ({"default": True} if name == "trajectories" else {})
        for name in DATA_CONFIGS
    ]
    data = DatasetCardData(
        pretty_name=f"SEAL rollouts: {repo_id}",
        task_categories=["text-generation"],
        tags=[*CARD_TAGS, "trajectories", "bfcl"],
        configs=configs,
        seal=_seal_metadata(links, derived_from, iteration=iteration, revision=tag, iterations=list(iterations)),
    )
    return _render(
        "dataset",
        data,
        repo_id=repo_id,
        tag=tag,
        iterations=list(iterations),
        rollouts=rollouts,
        mean_reward=mean_reward,
        links=list(links),
        derived_from=list(derived_from),
    )


def environment_card(
    snapshot: Any,
    repo_id: str,
    *,
    changes: Sequence[str],
    lineage: Sequence[str],
    links: Sequence[Link],
    derived_from: Sequence[Any] = (),
    teaching: Mapping[str, Any] | None = None,
) -> str:
    """The interface repo's README for `snapshot` (an `InterfaceSnapshot`): changelog from its parent, cause, and
    (`teaching`, the task sampler's summary) which tasks the environment was drawing when the version trained.

    A run that started from a published version names it (its `derived_from` environment source, or the snapshot's
    own `origin`) at the head of the lineage and in the changelog of its first version."""
    from huggingface_hub import DatasetCardData

    cause = None
    if snapshot.cause is not None:
        profile = snapshot.cause.profile
        rows = [
            {"label": str(label), "count": s.count, "prevalence": s.prevalence, "mean_reward": s.mean_reward}
            for label, s in sorted(profile.labels.items(), key=lambda item: -item[1].prevalence)
        ]
        cause = {
            "rollouts": profile.rollouts,
            "turns": profile.turns,
            "labels": rows,
            "rules": list(snapshot.cause.rules),
        }
    data = DatasetCardData(
        pretty_name=f"SEAL learning interface: {repo_id}",
        tags=[*CARD_TAGS, "learning-interface", "environment"],
        viewer=False,
        seal=_seal_metadata(
            links,
            derived_from,
            version=snapshot.version,
            parent=snapshot.parent,
            content_hash=snapshot.content_hash,
            suite=snapshot.suite,
            train_only=snapshot.train_only,
        ),
    )
    origin = snapshot.origin.describe() if snapshot.origin is not None else None
    return _render(
        "environment",
        data,
        repo_id=repo_id,
        ref=f"hf://{repo_id}@{snapshot.version}",
        version=snapshot.version,
        parent=snapshot.parent,
        suite=snapshot.suite,
        content_hash=snapshot.content_hash,
        train_only=snapshot.train_only,
        lineage=list(lineage),
        changes=list(changes),
        cause=cause,
        links=list(links),
        origin=origin,
        origin_hash=snapshot.origin.content_hash if snapshot.origin is not None else None,
        source=next((s.describe() for s in derived_from if s.role == "environment"), origin),
        derived_from=list(derived_from),
        teaching=teaching,
    )


def card_metadata(text: str) -> dict[str, Any]:
    """The YAML front matter of a card as a dict (empty when there is none)."""
    from huggingface_hub import RepoCard

    return RepoCard(text).data.to_dict()
