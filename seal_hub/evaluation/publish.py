"""Publishing an evaluation: its records as a dataset version, its scores on the evaluated adapter's card.

`publish_evaluation(out, records_repo)` reads a finished evaluation directory (`results.json`) and

1. pushes the records as a new version of the dataset repository `records_repo` (tag
   ``eval-<suite>-<split>-<adapter revision>``): ``trajectories/<tag>.parquet`` and ``diagnoses/<tag>.parquet``
   (the same configurations as a training run's dataset, so `load_trajectories` and `datasets.load_dataset`
   read them), ``results/<tag>.json`` and ``.md``, and a card; earlier evaluations in the repository stay;
2. pushes a new version of the adapter repository (tag ``<adapter revision>-eval-<suite>-<split>``) whose card
   carries the scores as ``model-index`` (`huggingface_hub.EvalResult`: per category and the average, success
   rate in percent), each linking the records at their version (``source_url``). Results already on the card
   for the same dataset, split and metric are replaced, others kept; the weights are not touched.

Both go through the registry of the adapter's reference (the local registry or the Hub), unless
`records_repo` names its own (``local://`` or ``hf://``). Only the head of the adapter's ``main`` can be scored
on its card: a card describes the files beside it, and pushing an older version's files would roll ``main``
back; evaluate ``repo@main`` (or republish the older version) instead.

Not covered: evaluating (`seal_hub.evaluation.harness`), or a base model without an adapter (it has no card here).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from seal_hub.evaluation.results import results_markdown_table
from seal_hub.hub.backends import registry_for
from seal_hub.hub.registry import HubError, Ref, Registry, Version, check_tag

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _results(out: Path) -> dict[str, Any]:
    path = out / "results.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: run `seal-hub eval` to the end first")
    return json.loads(path.read_text(encoding="utf-8"))


def _part(text: str) -> str:
    return _SAFE.sub("-", text).strip("-.")


def _revision_name(adapter: dict[str, Any]) -> str:
    """The adapter revision as a tag part: its tag or branch name, or a short commit."""
    revision = adapter["revision"]
    return _part(adapter["commit"][:12] if revision in ("main", adapter["commit"]) else revision)


def eval_tags(results: dict[str, Any]) -> tuple[str, str]:
    """(records tag, adapter tag) of an evaluation."""
    where = f"{_part(results['suite'])}-{_part(results['split'])}"
    revision = _revision_name(results["adapter"])
    return check_tag(f"eval-{where}-{revision}"[:100]), check_tag(f"{revision}-eval-{where}"[:100])


def records_card(repo_id: str, tag: str, results: dict[str, Any], adapter_url: str | None) -> str:
    from huggingface_hub import DatasetCardData

    from seal_hub.hub.cards import CARD_TAGS, _render

    files = results.get("files", {})
    configs = [
        {"config_name": name, "data_files": [{"split": "train", "path": f"{name}/*.parquet"}]}
        | ({"default": True} if name == "trajectories" else {})
        for name in ("trajectories", "diagnoses")
        if name in files
    ]
    adapter = results["adapter"]
    data = DatasetCardData(
        pretty_name=f"SEAL evaluation records: {repo_id}",
        tags=[*CARD_TAGS, "evaluation", results["suite"]],
        configs=configs,
        seal={"evaluation": tag, "adapter": f"{adapter['repo']}@{adapter['revision']}", "schema": results["schema"]},
    )
    return _render(
        "evaluation",
        data,
        repo_id=repo_id,
        tag=tag,
        model=f"{adapter['repo']}@{adapter['revision']}",
        suite=results["suite"],
        split=results["split"],
        split_source=results["split_source"],
        num_tasks=results["num_tasks"],
        interface=results["interface"]["ref"],
        table=results_markdown_table(results),
        adapter=adapter,
        adapter_url=adapter_url,
    )


def _eval_results(results: dict[str, Any], source_name: str, source_url: str) -> list:
    from huggingface_hub import EvalResult

    from seal_hub.envs.builtin import suite_card
    from seal_hub.envs.suite import SuiteCard

    recorded = results.get("card")  # what the suite's own card calls its dataset and task (older records: by name)
    card = SuiteCard(**recorded) if isinstance(recorded, dict) else suite_card(results["suite"])
    common = {
        "task_type": "text-generation",
        "task_name": card.task_name,
        "dataset_type": card.dataset_type,
        "dataset_name": card.dataset_name,
        "dataset_split": results["split"],
        "source_name": source_name,
        "source_url": source_url,
    }
    scores = results["scores"]
    found = [
        EvalResult(metric_type="success_rate", metric_value=round(scores["average"], 2), metric_name="avg", **common)
    ]
    for category, score in scores["per_category"].items():
        found.append(
            EvalResult(
                metric_type=f"success_rate_{category}",
                metric_value=round(score["success_rate"], 2),
                metric_name=f"{category} success rate (%)",
                **common,
            )
        )
    return found


_SAME = ("suite", "split", "split_source", "model", "adapter", "interface", "protocol", "scores", "task_ids")
_CARD_FILES = ("README.md", ".gitattributes")


def _weights(folder: Path) -> dict[str, bytes]:
    """An adapter version's files other than its card."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.relative_to(folder).as_posix() not in _CARD_FILES
    }


def check_adapter_head(adapter: dict[str, Any], registry: Registry | None = None) -> Path:
    """The folder of the head of the adapter's main, which must hold the evaluated weights (else `HubError`)."""
    ref = Ref(adapter["repo"], "model", backend=adapter.get("backend"))
    registry = registry or registry_for(ref)
    head = registry.resolve(ref.at("main"))
    current = registry.download(ref.at(head))
    evaluated = current if head == adapter["commit"] else registry.download(ref.at(adapter["commit"]))
    if _weights(current) != _weights(evaluated):
        raise HubError(
            f"{adapter['repo']}@{adapter['revision']} (commit {adapter['commit'][:12]}) is not the head of main "
            f"({head[:12]}): only the latest version's card can carry its scores; evaluate {adapter['repo']}@main"
        )
    return current


def _published(registry: Registry, repo_id: str, tag: str) -> dict[str, Any] | None:
    """The results record already published under `tag`, if any."""
    if not registry.repo_exists(repo_id, "dataset"):
        return None
    if tag not in {v.tag for v in registry.versions(repo_id, "dataset")}:
        return None
    path = registry.download(Ref(repo_id, "dataset", tag)) / "results" / f"{tag}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _staging() -> Path:
    return Path(tempfile.mkdtemp(prefix="seal_hub-eval-publish-"))


def publish_evaluation(out: str | Path, records_repo: str, registry: Registry | None = None) -> list[str]:
    """Publish the evaluation in `out` (see the module docstring); returns what was published, as lines."""
    out = Path(out)
    results = _results(out)
    adapter = results.get("adapter")
    if not adapter:
        raise ValueError("--publish records the scores on the evaluated adapter's card: give --adapter REF")
    adapter_ref = Ref(adapter["repo"], "model", backend=adapter.get("backend"))
    records_ref = Ref.parse(records_repo, "dataset")
    if records_ref.revision is not None:
        raise HubError(f"--publish {records_repo}: give a repository without '@revision' (the tag is chosen for you)")
    adapter_registry = registry or registry_for(adapter_ref)
    records_registry = registry or (registry_for(records_ref) if records_ref.backend else adapter_registry)
    current = check_adapter_head(adapter, adapter_registry)
    records_tag, adapter_tag = eval_tags(results)
    published = _published(records_registry, records_ref.repo_id, records_tag)
    if published is not None and {k: published.get(k) for k in _SAME} != {k: results.get(k) for k in _SAME}:
        raise HubError(
            f"{records_ref.repo_id}@{records_tag} already holds another evaluation of this adapter version; "
            "give another --publish repository"
        )
    if published is None:
        records = _push_records(records_registry, records_ref.repo_id, records_tag, out, results, adapter_tag)
    else:
        records = next(v for v in records_registry.versions(records_ref.repo_id, "dataset") if v.tag == records_tag)
    lines = [f"published records {records_ref.repo_id}@{records.tag} ({records.commit[:12]})"]
    tags = {v.tag: v for v in adapter_registry.versions(adapter["repo"], "model")}
    if adapter_tag in tags:  # this evaluation is already on the card
        return [*lines, f"published scores on {adapter['repo']}@{adapter_tag} ({tags[adapter_tag].commit[:12]})"]
    card = _scored_card(current / "README.md", results, records_ref.repo_id, records_tag)
    folder = _staging()
    try:
        (folder / "README.md").write_text(card, encoding="utf-8")
        average = results["scores"]["average"]
        message = f"{adapter_tag}: {results['suite']} avg {average:.2f} ({records_ref.repo_id}@{records_tag})"
        version = adapter_registry.push(
            adapter["repo"], "model", folder, tag=adapter_tag, message=message, keep_existing=True
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return [*lines, f"published scores on {adapter['repo']}@{version.tag} ({version.commit[:12]})"]


def _push_records(registry: Registry, repo_id: str, tag: str, out: Path, results: dict, adapter_tag: str) -> Version:
    """The evaluation's files as version `tag` of dataset `repo_id` (earlier evaluations there stay)."""
    from seal_hub.hub.artifacts import GITATTRIBUTES
    from seal_hub.hub.cards import Link

    folder = _staging()
    try:
        for config, name in (("trajectories", "trajectories.parquet"), ("diagnoses", "diagnoses.parquet")):
            if (out / name).is_file():
                (folder / config).mkdir()
                shutil.copy2(out / name, folder / config / f"{tag}.parquet")
        (folder / "results").mkdir()
        shutil.copy2(out / "results.json", folder / "results" / f"{tag}.json")
        shutil.copy2(out / "results.md", folder / "results" / f"{tag}.md")
        adapter_url = Link("adapter", results["adapter"]["repo"], "model", adapter_tag).url
        (folder / "README.md").write_text(records_card(repo_id, tag, results, adapter_url), encoding="utf-8")
        (folder / ".gitattributes").write_text(GITATTRIBUTES, encoding="utf-8")
        average = results["scores"]["average"]
        message = f"{tag}: {results['suite']} avg {average:.2f} on {results['num_tasks']} tasks"
        registry.create_repo(repo_id, "dataset")
        return registry.push(repo_id, "dataset", folder, tag=tag, message=message, keep_existing=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _scored_card(readme: Path, results: dict, records_repo: str, records_tag: str) -> str:
    """The adapter card with this evaluation in its model-index (same dataset/split/metric replaced) and body."""
    from huggingface_hub import ModelCard

    from seal_hub.hub.cards import Link

    link = Link("evaluation", records_repo, "dataset", records_tag)
    card = ModelCard(readme.read_text(encoding="utf-8") if readme.is_file() else "")
    new = _eval_results(results, f"seal-hub eval records ({link.ref})", link.url)
    replaced = {(r.dataset_type, r.dataset_split, r.metric_type) for r in new}
    previous = card.data.eval_results or []
    card.data.eval_results = [
        r for r in previous if (r.dataset_type, r.dataset_split, r.metric_type) not in replaced
    ] + new
    card.data.model_name = card.data.model_name or results["adapter"]["repo"]
    heading = f"## Evaluation: {results['suite']} ({results['split']} split)"
    body = card.text.split(f"\n{heading}\n")[0].rstrip()  # a re-evaluation replaces its section
    card.text = (
        f"{body}\n\n{heading}\n\n{results_markdown_table(results)}\n\n{results['num_tasks']} tasks; records: "
        f"[`{link.ref}`]({link.url}) (`seal-hub eval`, schema {results['schema']}).\n"
    )
    return str(card).rstrip() + "\n"
