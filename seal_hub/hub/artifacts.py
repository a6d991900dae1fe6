"""Publishing a run's three artifacts, each a versioned repository with a card linking the other two.

- Trajectories + diagnoses: a dataset repo (``<run>-trajectories``). Version ``iter-<k>`` adds
  ``trajectories/iter-<k>.parquet`` and ``diagnoses/iter-<k>.parquet`` to the previous version's files, so a tag
  holds the run up to that iteration and ``main`` holds all of it; the card declares the two configurations
  (``configs:``), so ``datasets.load_dataset(repo, "diagnoses", revision="iter-3")`` works on the Hub and on a
  local checkout alike.
- Environment interface: a dataset repo (``<run>-env``, viewer off) holding ``interface.json``; one version per
  snapshot, tagged with the snapshot's version (``v3``). Its card is the changelog: `seal_hub.interface.diff`
  from the parent (read from the same repo, which must hold it) and the failure profile and rules that caused
  it. Publishing a snapshot whose version is already there with the same content hash is a no-op.
- Policy: a model repo (``<run>-adapter``), tag ``iter-<k>``, holding what the checkpoint's ``save_model`` wrote
  (`seal_hub.hub.policy`): for a LoRA run the PEFT files, card metadata ``library_name: peft``; for a full
  fine-tune the whole model (config, weights, tokenizer), loadable with ``AutoModelForCausalLM``, card metadata
  ``library_name: transformers``, ``base_model_relation: finetune``. Both cards name the base model
  (``base_model`` when it has a Hub id; a folder of this machine by its name only: `seal_hub.hub.cards.card_base`), the
  seal/trl/grpo/tool-use tags, the dataset, the environment version and, when given, evaluation results as
  ``model-index``. The repository keeps its ``-adapter`` name for both kinds, so a run's three names never depend
  on how it was trained.

`publish_iteration` publishes all three for one iteration with matching links; `sources` (a run's published
starting points, `seal_hub.hub.sources.Source`) are named on every card as "derived from ref (commit ...)".
`PublishConfig` is the config dataclass a recipe parses; its backend 'auto' publishes to the Hub when a token or
endpoint is configured and the Hub answers (`seal_hub.hub_reach`), else to the local registry, saying so once.
Every artifact is assembled in a temporary folder and pushed as one version by the registry
(`seal_hub.hub.registry`), which makes the push atomic.

Not covered: loading (`seal_hub.hub.loading`), copying between registries (`seal_hub.hub.sync`), and deciding when
to publish (the trainer).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seal_hub.hub.backends import get_registry
from seal_hub.hub.cards import (
    EvalScore,
    Link,
    adapter_card,
    card_base,
    dataset_card,
    environment_card,
    published_base,
)
from seal_hub.hub.policy import ADAPTER_CONFIG, policy_files
from seal_hub.hub.registry import (
    HubError,
    Ref,
    Registry,
    Version,
    VersionExistsError,
    check_tag,
    configured_backend,
)

GITATTRIBUTES = "".join(
    f"{pattern} filter=lfs diff=lfs merge=lfs -text\n" for pattern in ("*.parquet", "*.safetensors", "*.bin", "*.pt")
)
ITERATION = re.compile(r"^iter-\d+$")
INTERFACE_FILE = "interface.json"
TASK_SAMPLER_FILE = "task_sampler.json"  # the task sampler's summary when the version was first trained against


def iteration_tag(iteration: int) -> str:
    if iteration < 0:
        raise ValueError(f"iteration={iteration} must be >= 0")
    return f"iter-{iteration}"


@dataclass(frozen=True)
class RunRepos:
    """The three repositories of a run named ``namespace/name``."""

    trajectories: str
    environment: str
    adapter: str

    @classmethod
    def of(cls, run: str) -> RunRepos:
        Ref(run)  # validates namespace/name
        return cls(f"{run}-trajectories", f"{run}-env", f"{run}-adapter")

    def links(self, iteration: int, environment_version: str) -> dict[str, Link]:
        tag = iteration_tag(iteration)
        return {
            "trajectories": Link("trajectories", self.trajectories, "dataset", tag),
            "environment": Link("environment", self.environment, "dataset", environment_version),
            "adapter": Link("adapter", self.adapter, "model", tag),
        }


@dataclass
class PublishConfig:
    """Where a run publishes its artifacts (parse it with TrlParser alongside the training config)."""

    run: str = field(
        default="",
        metadata={"help": "Run id 'namespace/name'; its repos are <run>-trajectories, <run>-env, <run>-adapter."},
    )
    backend: str = field(
        default="auto",
        metadata={
            "help": "'local': the local git registry ($SEAL_HUB_REGISTRY); 'hub': the Hugging Face Hub; 'auto': the "
            "Hub when a token or HF_ENDPOINT is configured and the Hub can be reached, else local.",
            "choices": ["auto", "local", "hub"],
        },
    )
    private: bool = field(default=False, metadata={"help": "Create Hub repositories private (Hub backend only)."})
    base_model: str | None = field(
        default=None,
        metadata={"help": "Hub id the adapter card names as base_model (default: the adapter's own config)."},
    )

    def __post_init__(self) -> None:
        if self.backend not in ("auto", "local", "hub"):
            raise ValueError(f"backend={self.backend!r} is not one of 'auto', 'local', 'hub'")
        if not self.run:
            raise ValueError("run is empty: give the run id as 'namespace/name', e.g. run='alice/seal-qwen7b'")
        try:
            RunRepos.of(self.run)
        except HubError as exc:
            raise ValueError(f"run={self.run!r}: {exc}") from None
        if self.private and self.backend == "local":
            raise ValueError("private=True only applies to the Hub: set backend='hub' (or 'auto'), or private=False")

    @property
    def repos(self) -> RunRepos:
        return RunRepos.of(self.run)

    def registry(self) -> Registry:
        backend = configured_backend() if self.backend == "auto" else self.backend
        if backend == "hub" and self.backend == "auto":
            from seal_hub.console import notice_once
            from seal_hub.hub_reach import hub_reach

            reach = hub_reach()
            if not reach.online:
                namespace = self.run.split("/")[0]
                notice_once(
                    "publish-auto-local",
                    f"{reach.reason}: publishing to the local registry instead (publish_backend 'auto'); "
                    f"`seal-hub hub sync local://{namespace} hf://{namespace}` publishes it to the Hub later",
                )
                backend = "local"
        if backend == "hub":
            from seal_hub.hub.hf import HubRegistry

            return HubRegistry(private=self.private)
        return get_registry("local")


def _staging(near: Path | None = None) -> Path:
    """A temporary folder: beside `near` when it can be (files placed from there become hard links), else $TMPDIR."""
    if near is not None:
        try:
            return Path(tempfile.mkdtemp(prefix=".seal_hub-publish-", dir=near))
        except OSError:  # a read-only folder
            pass
    return Path(tempfile.mkdtemp(prefix="seal_hub-publish-"))


def _write(folder: Path, name: str, text: str) -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def publish_trajectories(
    repo_id: str,
    iteration: int,
    trajectories: Sequence[Any],
    diagnoses: Sequence[Mapping[str, Any]],
    *,
    links: Sequence[Link] = (),
    registry: Registry | None = None,
    sources: Sequence[Any] = (),
) -> Version:
    """Add iteration `iteration`'s rollouts (`Trajectory` records) and diagnosis rows (`diagnosis_rows`)."""
    from datasets import Dataset

    from seal_hub.diagnosis.records import DIAGNOSIS_FEATURES
    from seal_hub.rollout.records import to_dataset

    if not trajectories:
        raise ValueError(f"no trajectories to publish for iteration {iteration} of {repo_id}")
    if len(diagnoses) != len(trajectories):
        raise ValueError(
            f"{len(trajectories)} trajectories but {len(diagnoses)} diagnosis rows: give one row per rollout "
            "(seal_hub.diagnosis.records.diagnosis_rows)"
        )
    registry = registry or get_registry()
    tag = iteration_tag(iteration)
    previous = (
        [v.tag for v in registry.versions(repo_id, "dataset")] if registry.repo_exists(repo_id, "dataset") else []
    )
    folder = _staging()
    try:
        for name in ("trajectories", "diagnoses"):
            (folder / name).mkdir()
        to_dataset(list(trajectories)).to_parquet(str(folder / "trajectories" / f"{tag}.parquet"))
        rows = [dict(row) for row in diagnoses]
        Dataset.from_list(rows, features=DIAGNOSIS_FEATURES).to_parquet(str(folder / "diagnoses" / f"{tag}.parquet"))
        iterations = sorted({*(t for t in previous if ITERATION.match(t)), tag}, key=lambda t: int(t[5:]))
        mean_reward = sum(t.reward for t in trajectories) / len(trajectories)
        card = dataset_card(
            repo_id,
            tag,
            iterations=iterations,
            rollouts=len(trajectories),
            mean_reward=mean_reward,
            links=links,
            iteration=iteration,
            derived_from=sources,
        )
        _write(folder, "README.md", card)
        _write(folder, ".gitattributes", GITATTRIBUTES)
        message = f"{tag}: {len(trajectories)} rollouts, mean reward {mean_reward:.3f}"
        return registry.push(repo_id, "dataset", folder, tag=tag, message=message, keep_existing=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def publish_interface(
    repo_id: str,
    snapshot: Any,
    *,
    links: Sequence[Link] = (),
    registry: Registry | None = None,
    sources: Sequence[Any] = (),
    teaching: Mapping[str, Any] | None = None,
) -> Version:
    """Publish an `InterfaceSnapshot` as version `snapshot.version`; its parent must already be in the repo.

    `sources` (`seal_hub.hub.sources.Source` records) name the published artifacts the run started from.
    `teaching`: the task sampler's summary when the version was first trained against
    (`seal_hub.training.task_sampler.TaskSampler.summary`), written beside the interface as `TASK_SAMPLER_FILE` and
    shown on the card: which tasks the environment was drawing, not only how it showed them. It is not part of
    the interface's content hash (the same interface may teach different tasks in another run)."""
    from seal_hub.interface import diff, load_snapshot

    registry = registry or get_registry()
    tag = check_tag(snapshot.version)
    versions = registry.versions(repo_id, "dataset") if registry.repo_exists(repo_id, "dataset") else []
    known = {v.tag: v for v in versions}
    if tag in known:
        stored = load_snapshot(registry.download(Ref(repo_id, "dataset", tag)) / INTERFACE_FILE)
        if stored.content_hash == snapshot.content_hash:
            return known[tag]
        raise VersionExistsError(
            f"{repo_id}@{tag} already holds interface {stored.content_hash[:12]}..., not "
            f"{snapshot.content_hash[:12]}...: snapshots are immutable, evolve a new version"
        )
    changes: list[str] = []
    if snapshot.parent is not None:
        if snapshot.parent not in known:
            have = ", ".join(known) or "none"
            raise HubError(
                f"{repo_id}: parent {snapshot.parent!r} of {tag!r} is not published (versions: {have}); "
                "publish the parent first"
            )
        parent = load_snapshot(registry.download(Ref(repo_id, "dataset", snapshot.parent)) / INTERFACE_FILE)
        changes = diff(parent, snapshot)
    lineage = [v.tag for v in versions] + [tag]
    folder = _staging()
    try:
        snapshot.save(folder / INTERFACE_FILE)
        if teaching is not None:
            _write(folder, TASK_SAMPLER_FILE, json.dumps(teaching, indent=2, sort_keys=True) + "\n")
        card = environment_card(
            snapshot, repo_id, changes=changes, lineage=lineage, links=links, derived_from=sources, teaching=teaching
        )
        _write(folder, "README.md", card)
        _write(folder, ".gitattributes", GITATTRIBUTES)
        parent = snapshot.parent or "none"
        message = f"{tag}: interface {snapshot.content_hash[:12]} (parent {parent}, {len(changes)} changes)"
        return registry.push(repo_id, "dataset", folder, tag=tag, message=message)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def publish_policy(
    repo_id: str,
    iteration: int,
    adapter_dir: str | Path,
    *,
    base_model: str | None = None,
    links: Sequence[Link] = (),
    results: Sequence[EvalScore] = (),
    registry: Registry | None = None,
    sources: Sequence[Any] = (),
) -> Version:
    """Publish a policy folder as version ``iter-<iteration>``: a PEFT adapter (``save_pretrained`` output) or a full
    model (``save_model`` / ``save_pretrained`` output, e.g. a checkpoint); only its policy files go
    (`seal_hub.hub.policy.policy_files`). `base_model` names the model it was trained from (an adapter's default:
    its ``base_model_name_or_path``; a full model's config does not record it, so it must be given)."""
    adapter_dir = Path(adapter_dir)
    kind, files = policy_files(adapter_dir)
    if kind == "adapter":
        config_path = adapter_dir / ADAPTER_CONFIG
        base_model = base_model or json.loads(config_path.read_text(encoding="utf-8")).get("base_model_name_or_path")
        if not base_model:
            raise ValueError(f"{config_path} names no base_model_name_or_path: pass base_model='org/name'")
    elif not base_model:
        raise ValueError(
            f"{adapter_dir} holds a full model, whose config does not name the model it was fine-tuned from: pass "
            "base_model='org/name' (PublishConfig.base_model)"
        )
    base_model, base_weights = published_base(base_model)
    registry = registry or get_registry()
    tag = iteration_tag(iteration)
    folder = _staging(adapter_dir.parent if kind == "full" else None)  # a full model's files: linked, not copied
    try:
        for name in files:
            _place(adapter_dir / name, folder / name)
        card = adapter_card(
            repo_id,
            tag,
            base_model=base_model,
            links=links,
            iteration=iteration,
            results=results,
            base_weights=base_weights,
            derived_from=sources,
            kind=kind,
        )
        _write(folder, "README.md", card)
        _write(folder, ".gitattributes", GITATTRIBUTES)
        what = "LoRA adapter on" if kind == "adapter" else "full fine-tune of"
        message = f"{tag}: {what} {card_base(base_model)[0]}" + (
            ", " + ", ".join(f"{r.metric} {r.value}" for r in results) if results else ""
        )
        return registry.push(repo_id, "model", folder, tag=tag, message=message)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _place(source: Path, target: Path) -> None:
    """Stage one file: a hard link where the file system allows it (a 7B model's weights are 15 GB), else a copy."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def publish_iteration(
    repos: RunRepos,
    iteration: int,
    *,
    trajectories: Sequence[Any],
    diagnoses: Sequence[Mapping[str, Any]],
    snapshot: Any,
    adapter_dir: str | Path,
    teaching: Mapping[str, Any] | None = None,
    base_model: str | None = None,
    results: Sequence[EvalScore] = (),
    registry: Registry | None = None,
    sources: Sequence[Any] = (),
) -> dict[str, Version]:
    """Publish one iteration: the interface it trained against, its rollouts, its policy; cards cross-linked.

    `adapter_dir`: the policy folder, a PEFT adapter or a full model (a checkpoint will do: see `publish_policy`).

    `sources`: the published artifacts the run started from (`seal_hub.hub.sources.Source`), named on every card."""
    registry = registry or get_registry()
    links = repos.links(iteration, snapshot.version)

    def others(role: str) -> list[Link]:
        return [link for name, link in links.items() if name != role]

    return {
        "environment": publish_interface(
            repos.environment,
            snapshot,
            links=others("environment"),
            registry=registry,
            sources=sources,
            teaching=teaching,
        ),
        "trajectories": publish_trajectories(
            repos.trajectories,
            iteration,
            trajectories,
            diagnoses,
            links=others("trajectories"),
            registry=registry,
            sources=sources,
        ),
        "adapter": publish_policy(
            repos.adapter,
            iteration,
            adapter_dir,
            base_model=base_model,
            links=others("adapter"),
            results=results,
            registry=registry,
            sources=sources,
        ),
    }
