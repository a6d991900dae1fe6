"""Cards (README.md with YAML front matter) for the three artifacts, from the Jinja templates in `model_cards/`.

Each card's metadata is built with `huggingface_hub`'s card-data classes (`ModelCardData`, `DatasetCardData`,
`EvalResult`), so the YAML is what the Hub expects (``model-index`` from evaluation results, ``configs`` for the
dataset's two configurations), and the body comes from ``model_cards/{adapter,model,dataset,environment}.md``
(``$SEAL_HUB_CARD_TEMPLATES`` points elsewhere; ``model.md`` is the policy card of a full fine-tune). Every card
links the other two artifacts at the matching revision, as `repo@revision` and as a Hub URL
(``https://huggingface.co``: a card describes the published artifact, and stays byte-identical when a local
version is synced to the Hub).

Design choice: cards are built only from the arguments given here (ids, revisions, numbers, the snapshot), never
from the environment, so no token or local path can slip into one unless passed in on purpose.

Not covered: writing or pushing the cards (`seal_hub.hub.artifacts`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seal_hub.hub.registry import RepoType

TEMPLATES_ENV = "SEAL_HUB_CARD_TEMPLATES"
HUB_URL = "https://huggingface.co"
CARD_TAGS = ("seal", "trl", "grpo", "tool-use")
DATA_CONFIGS = ("trajectories", "diagnoses")


def templates_dir() -> Path:
    """$SEAL_HUB_CARD_TEMPLATES, else the checkout's model_cards/ (editable install), else the installed copy."""
    configured = os.environ.get(TEMPLATES_ENV)
    if configured:
        candidates = [Path(configured)]
    else:
        candidates = [
            Path(__file__).resolve().parents[2] / "model_cards",
            Path(sys.prefix) / "share" / "seal_hub" / "model_cards",
        ]
    for path in candidates:
        if (path / "adapter.md").is_file():
            return path
    raise FileNotFoundError(
        f"no card templates in {' or '.join(map(str, candidates))}: set {TEMPLATES_ENV} to the model_cards/ "
        "folder of the seal_hub sources"
    )


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
    card = card_class.from_template(card_data, template_path=str(templates_dir() / f"{kind}.md"), **context)
    return str(card).rstrip() + "\n"


def _seal_metadata(links: Sequence[Link], derived_from: Sequence[Any] = (), **extra: Any) -> dict[str, Any]:
    data = {key: value for key, value in extra.items() if value is not None}
    data.update({link.role: link.ref for link in links})
    if derived_from:  # `seal_hub.hub.sources.Source` records: the published artifacts the run started from
        data["derived_from"] = [
            {"role": s.role, "ref": s.ref, "commit": s.commit, "backend": s.backend} for s in derived_from
        ]
    return data


SINGLE_TURN_DATASETS = ("bfcl-single",)


def task_name(dataset_type: str) -> str:
    """The model-index task an evaluation dataset measures: single-turn calling or multi-turn tool use."""
    return "Single-turn tool calling" if dataset_type in SINGLE_TURN_DATASETS else "Multi-turn tool use"


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
    ``base_model_relation: finetune``, tag ``full-fine-tune``; body from ``model.md``)."""
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
    data = ModelCardData(
        base_model=base_model,
        base_model_relation="finetune" if full else None,
        library_name="transformers" if full else "peft",
        pipeline_tag="text-generation",
        tags=[*CARD_TAGS, "full-fine-tune" if full else "lora"],
        datasets=[link.repo_id for link in links if link.role == "trajectories"] or None,
        model_name=repo_id if evals else None,
        eval_results=evals or None,
        seal=_seal_metadata(links, derived_from, iteration=iteration, revision=tag, base_weights=base_weights),
    )
    base_url = None if _is_path(base_model) else f"{HUB_URL}/{base_model}"
    ref = f"hf://{repo_id}@{tag}"
    return _render(
        "model" if full else "adapter",
        data,
        repo_id=repo_id,
        tag=tag,
        ref=ref,
        base_model=base_model,
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
) -> str:
    """The interface repo's README for `snapshot` (an `InterfaceSnapshot`): changelog from its parent, and cause.

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
    )


def card_metadata(text: str) -> dict[str, Any]:
    """The YAML front matter of a card as a dict (empty when there is none)."""
    from huggingface_hub import RepoCard

    return RepoCard(text).data.to_dict()
