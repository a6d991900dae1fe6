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
from seal_hub.hub.registry import HubError, Ref, Registry, check_tag, registry_for

BFCL_DATASET = ("bfcl_v3_multi_turn", "BFCL v3 multi-turn")
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


def _dataset_of(suite: str) -> tuple[str, str]:
    return BFCL_DATASET if suite == "bfcl" else (suite, suite)


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

    dataset_type, dataset_name = _dataset_of(results["suite"])
    common = {
        "task_type": "text-generation",
        "task_name": "Multi-turn tool use",
        "dataset_type": dataset_type,
        "dataset_name": dataset_name,
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


def _staging() -> Path:
    return Path(tempfile.mkdtemp(prefix="seal_hub-eval-publish-"))


def publish_evaluation(out: str | Path, records_repo: str, registry: Registry | None = None) -> list[str]:
    """Publish the evaluation in `out` (see the module docstring); returns what was published, as lines."""
    from huggingface_hub import ModelCard

    from seal_hub.hub.artifacts import GITATTRIBUTES
    from seal_hub.hub.cards import Link

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
    head = adapter_registry.resolve(adapter_ref.at("main"))
    if head != adapter["commit"]:
        raise HubError(
            f"{adapter['repo']}@{adapter['revision']} (commit {adapter['commit'][:12]}) is not the head of main "
            f"({head[:12]}): only the latest version's card can carry its scores; evaluate {adapter['repo']}@main"
        )
    records_tag, adapter_tag = eval_tags(results)
    records_link = Link("evaluation", records_ref.repo_id, "dataset", records_tag)
    adapter_link = Link("adapter", adapter["repo"], "model", adapter_tag)

    folder = _staging()
    try:
        for config, name in (("trajectories", "trajectories.parquet"), ("diagnoses", "diagnoses.parquet")):
            if (out / name).is_file():
                (folder / config).mkdir()
                shutil.copy2(out / name, folder / config / f"{records_tag}.parquet")
        (folder / "results").mkdir()
        shutil.copy2(out / "results.json", folder / "results" / f"{records_tag}.json")
        shutil.copy2(out / "results.md", folder / "results" / f"{records_tag}.md")
        card = records_card(records_ref.repo_id, records_tag, results, adapter_link.url)
        (folder / "README.md").write_text(card, encoding="utf-8")
        (folder / ".gitattributes").write_text(GITATTRIBUTES, encoding="utf-8")
        average = results["scores"]["average"]
        message = f"{records_tag}: {results['suite']} avg {average:.2f} on {results['num_tasks']} tasks"
        records_registry.create_repo(records_ref.repo_id, "dataset")
        records_version = records_registry.push(
            records_ref.repo_id, "dataset", folder, tag=records_tag, message=message, keep_existing=True
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    current = adapter_registry.download(adapter_ref.at(head))
    readme = current / "README.md"
    card = ModelCard(readme.read_text(encoding="utf-8") if readme.is_file() else "")
    new = _eval_results(results, f"seal-hub eval records ({records_link.ref})", records_link.url)
    replaced = {(r.dataset_type, r.dataset_split, r.metric_type) for r in new}
    kept = [
        r for r in card.data.eval_results or [] if (r.dataset_type, r.dataset_split, r.metric_type) not in replaced
    ]
    card.data.eval_results = kept + new
    card.data.model_name = card.data.model_name or adapter["repo"]
    section = (
        f"\n\n## Evaluation: {results['suite']} ({results['split']}, {results['num_tasks']} tasks)\n\n"
        f"{results_markdown_table(results)}\n\nRecords: [`{records_link.ref}`]({records_link.url}) "
        f"(`seal-hub eval`, schema {results['schema']}).\n"
    )
    card.text = card.text.rstrip() + section
    folder = _staging()
    try:
        (folder / "README.md").write_text(str(card).rstrip() + "\n", encoding="utf-8")
        message = f"{adapter_tag}: {results['suite']} avg {average:.2f} ({records_link.ref})"
        adapter_version = adapter_registry.push(
            adapter["repo"], "model", folder, tag=adapter_tag, message=message, keep_existing=True
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return [
        f"published records {records_ref.repo_id}@{records_version.tag} ({records_version.commit[:12]})",
        f"published scores on {adapter['repo']}@{adapter_version.tag} ({adapter_version.commit[:12]})",
    ]
