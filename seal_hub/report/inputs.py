"""What a report is made from: SEAL run directories and evaluation directories, read into typed records.

A run directory is what training leaves (`seal_hub.training.run_records`): `iterations/step_NNNNNN/metrics.json` (+ the
iteration's Parquet files), `interfaces/vN.json`, `checkpoint-N/`, `run_config.json` and, when the run evaluated
on held-out tasks as it trained, `held_out/step_NNNNNN.json`. An evaluation directory
holds `results.json` (schema `seal_hub.eval/1`, written by `seal-hub eval`) and optionally its Parquet records.
`load_input` tells the two apart and reads one.

Design choices: a run killed mid-way is still a run: unfinished `*.partial` folders are skipped and said in
`notes`, and a run with no finished iteration yields an empty record. Corrupt input is not guessed around: a
metrics or results file that is not JSON or lacks a field, a Parquet file whose footer cannot be read, or an
edited interface snapshot raises `ReportInputError` naming the file (the CLI prints it as one line).
Parquet files are checked by their metadata only; the per-category success of an iteration is read from the
small `diagnoses.parquet` (two columns).

Not covered: naming the sources for tables (`seal_hub.report.naming`), drawing (`seal_hub.report.plots`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from seal_hub.diagnosis import LabelStats
from seal_hub.interface import InterfaceSnapshot, load_snapshot
from seal_hub.training.run_records import (
    ITERATIONS_DIR,
    RUN_CONFIG_FILE,
    held_out_files,
    is_partial,
    iteration_folders,
    iteration_step,
)

RESULTS_FILE = "results.json"
EVAL_SCHEMA_PREFIX = "seal_hub.eval/"


class ReportInputError(ValueError):
    """A directory given to the report is not a run or an evaluation, or one of its files is unreadable."""


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class _Profile(_Lenient):
    rollouts: int = Field(ge=0)
    turns: int = Field(ge=0)
    labels: dict[str, LabelStats] = {}  # str keys: a label this version does not know is still read


class _Metrics(_Lenient):
    rollouts: int = Field(ge=0)
    success_rate: float = Field(ge=0.0, le=1.0)
    mean_weight: float
    rho: dict[str, float]
    interface_version: str
    label_profile: _Profile


class _HeldOutCounts(_Lenient):
    passed: int = Field(ge=0)
    total: int = Field(ge=0)


class _HeldOut(_Lenient):
    step: int = Field(ge=0)
    num_tasks: int = Field(ge=0)
    success_rate: float = Field(ge=0.0, le=1.0)
    per_category: dict[str, _HeldOutCounts] = {}


class CategoryScore(_Lenient):
    passed: int = Field(ge=0)
    total: int = Field(ge=0)
    success_rate: float = Field(ge=0.0, le=100.0)  # percent


class _Scores(_Lenient):
    per_category: dict[str, CategoryScore]
    average: float = Field(ge=0.0, le=100.0)


class _ModelRef(_Lenient):
    id: str
    revision: str | None = None


class _AdapterRef(_Lenient):
    ref: str


class _InterfaceRef(_Lenient):
    ref: str
    version: str


class EvalResults(_Lenient):
    """The fields of `results.json` a report reads (the file may hold more)."""

    schema_: str = Field(alias="schema")
    suite: str
    split: str
    num_tasks: int = Field(ge=0)
    model: _ModelRef
    adapter: _AdapterRef | None = None
    interface: _InterfaceRef
    scores: _Scores
    created_at: str | None = None
    wall_seconds: float | None = None


@dataclass(frozen=True)
class Iteration:
    """One finished training iteration (one optimizer step's rollouts)."""

    step: int
    rollouts: int
    success_rate: float  # fraction
    mean_weight: float
    rho: dict[str, float]
    interface_version: str
    prevalence: dict[str, float]  # label -> share of the iteration's labelled turns
    category_success: dict[str, tuple[int, int]] = field(default_factory=dict)  # category -> (passed, rollouts)


@dataclass(frozen=True)
class HeldOutPoint:
    """One held-out evaluation made during training (`seal_hub.training.held_out`)."""

    step: int
    num_tasks: int
    success_rate: float  # fraction
    per_category: dict[str, tuple[int, int]]

    @property
    def average(self) -> float:
        """The mean of the per-category success rates (the paper's "avg", as a fraction): what the comparison's
        table prints; equal to `success_rate` when every category has as many tasks."""
        rates = [passed / total for passed, total in self.per_category.values() if total]
        return sum(rates) / len(rates) if rates else self.success_rate


@dataclass(frozen=True)
class StagePoint:
    """A held-out comparison stage before GRPO (`seal_hub.training.comparison`: eval/base, eval/warmup)."""

    name: str  # "base", "warmup"
    average: float  # fraction
    num_tasks: int


@dataclass(frozen=True)
class InterfaceVersion:
    version: str
    parent: str | None
    created_at: str
    components: tuple[str, ...]  # what the version adds, in words

    @classmethod
    def of(cls, snapshot: InterfaceSnapshot) -> InterfaceVersion:
        parts = []
        if snapshot.schema_cues.enabled:
            parts.append("schema cues")
        if snapshot.recovery_feedback.enabled:
            parts.append(f"recovery feedback ({len(snapshot.recovery_feedback.hints)} hints)")
        if snapshot.capability_guidelines.enabled and snapshot.capability_guidelines.lines:
            labels = ", ".join(str(line.label) for line in snapshot.capability_guidelines.lines)
            parts.append(f"guidelines: {labels}")
        return cls(snapshot.version, snapshot.parent, snapshot.created_at, tuple(parts))


@dataclass(frozen=True)
class RunRecord:
    path: Path
    config: dict[str, Any]  # run_config.json; empty for runs made before it existed
    iterations: tuple[Iteration, ...]
    interfaces: tuple[InterfaceVersion, ...]
    checkpoints: tuple[int, ...]
    notes: tuple[str, ...] = ()
    held_out: tuple[HeldOutPoint, ...] = ()
    stages: tuple[StagePoint, ...] = ()  # the comparison's base and warm-up evaluations, where the run made them


@dataclass(frozen=True)
class EvalRecord:
    path: Path
    results: EvalResults
    notes: tuple[str, ...] = ()
    label_counts: dict[str, int] = field(default_factory=dict)  # turn labels of the evaluated episodes


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ReportInputError(f"{path} is not valid JSON ({exc})") from None


def _validated(model: type[BaseModel], data: Any, path: Path) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise ReportInputError(f"{path}: field {where}: {first['msg']}") from None


def _check_parquet(path: Path) -> None:
    try:
        pq.read_metadata(path)
    except Exception as exc:  # pyarrow raises several types for a broken file
        raise ReportInputError(f"{path} is not a readable Parquet file ({type(exc).__name__}: {exc})") from None


def _category_success(path: Path) -> dict[str, tuple[int, int]]:
    try:
        table = pq.read_table(path, columns=["category", "reward"]).to_pydict()
    except Exception as exc:
        raise ReportInputError(f"{path} is not a readable diagnoses file ({type(exc).__name__}: {exc})") from None
    counts: dict[str, list[int]] = {}
    for category, reward in zip(table["category"], table["reward"], strict=True):
        entry = counts.setdefault(category, [0, 0])
        entry[0] += int(reward >= 1.0)
        entry[1] += 1
    return {category: (passed, total) for category, (passed, total) in sorted(counts.items())}


def _label_counts(path: Path) -> dict[str, int]:
    """How often each turn label occurs in a diagnoses file; {} when the file has no `labels` column."""
    if "labels" not in pq.read_schema(path).names:
        return {}
    try:
        rows = pq.read_table(path, columns=["labels"]).column("labels").to_pylist()
    except Exception as exc:
        raise ReportInputError(f"{path} is not a readable diagnoses file ({type(exc).__name__}: {exc})") from None
    counts: dict[str, int] = {}
    for labels in rows:
        for label in labels or ():
            if label is not None:
                counts[label] = counts.get(label, 0) + 1
    return counts


def _iteration(folder: Path) -> Iteration:
    metrics_path = folder / "metrics.json"
    if not metrics_path.is_file():
        raise ReportInputError(f"{metrics_path} is missing: {folder} is not a finished iteration")
    metrics: _Metrics = _validated(_Metrics, _read_json(metrics_path), metrics_path)
    for name in ("trajectories.parquet", "diagnoses.parquet"):
        if (folder / name).exists():
            _check_parquet(folder / name)
    diagnoses = folder / "diagnoses.parquet"
    return Iteration(
        step=iteration_step(folder),
        rollouts=metrics.rollouts,
        success_rate=metrics.success_rate,
        mean_weight=metrics.mean_weight,
        rho=dict(metrics.rho),
        interface_version=metrics.interface_version,
        prevalence={label: s.prevalence for label, s in metrics.label_profile.labels.items()},
        category_success=_category_success(diagnoses) if diagnoses.exists() else {},
    )


def _version_key(version: str) -> tuple[int, str]:
    digits = version.lstrip("v")
    return (int(digits), version) if digits.isdigit() else (1 << 30, version)


def _model_from_adapter(path: Path, checkpoints: list[int]) -> dict[str, Any]:
    """The base model a LoRA run names in its saved adapter (the run's, else its last checkpoint's)."""
    for folder in [path, *(path / f"checkpoint-{n}" for n in reversed(checkpoints))]:
        file = folder / "adapter_config.json"
        if file.is_file():
            model = _read_json(file).get("base_model_name_or_path")
            return {"model": model} if isinstance(model, str) else {}
    return {}


def _held_out(path: Path, last_step: int, notes: list[str]) -> tuple[HeldOutPoint, ...]:
    points = []
    for file in held_out_files(path):
        record: _HeldOut = _validated(_HeldOut, _read_json(file), file)
        counts = {c: (v.passed, v.total) for c, v in record.per_category.items()}
        points.append(HeldOutPoint(record.step, record.num_tasks, record.success_rate, counts))
    stale = [p.step for p in points if p.step > last_step]
    if stale:  # made before a resume rolled the run back to an earlier checkpoint
        notes.append(f"held-out evaluations after the last iteration ignored (steps {stale})")
    return tuple(p for p in points if p.step <= last_step)


def load_run(path: Path) -> RunRecord:
    notes = []
    folders = iteration_folders(path, partial=True)
    partial = [f.name for f in folders if is_partial(f)]
    if partial:
        notes.append(f"unfinished iteration folder(s) skipped: {', '.join(partial)} (the run was stopped mid-step)")
    iterations = tuple(_iteration(f) for f in folders if not is_partial(f))
    if not iterations:
        notes.append("no finished iteration yet")
    snapshots = []
    for file in sorted((path / "interfaces").glob("*.json"), key=lambda p: _version_key(p.stem)):
        try:
            snapshots.append(InterfaceVersion.of(load_snapshot(file)))
        except ValueError as exc:
            raise ReportInputError(str(exc).splitlines()[0]) from None
    checkpoints = sorted(
        int(p.name.rsplit("-", 1)[1])
        for p in path.glob("checkpoint-*")
        if p.is_dir() and p.name.rsplit("-", 1)[1].isdigit()
    )
    if iterations and (not checkpoints or checkpoints[-1] < iterations[-1].step):
        notes.append(f"iterations after the last checkpoint ({checkpoints[-1] if checkpoints else 'none'}) are kept")
    config_path = path / RUN_CONFIG_FILE
    config = _read_json(config_path) if config_path.is_file() else {}
    if not isinstance(config, dict):
        raise ReportInputError(f"{config_path}: expected a JSON object, got {type(config).__name__}")
    if not config:
        config = _model_from_adapter(path, checkpoints)
        notes.append(f"no {RUN_CONFIG_FILE} (made before runs recorded it): the ablation switches are unknown")
    held_out = _held_out(path, iterations[-1].step if iterations else 0, notes)
    stages = _stages(path)
    return RunRecord(path, config, iterations, tuple(snapshots), tuple(checkpoints), tuple(notes), held_out, stages)


def _stages(path: Path) -> tuple[StagePoint, ...]:
    """The run's comparison stages before GRPO that finished (their `results.json` written)."""
    from seal_hub.evaluation.results import RESULTS_JSON
    from seal_hub.training.comparison import stage_dir

    points = []
    for name in ("base", "warmup"):
        file = stage_dir(path, name) / RESULTS_JSON
        if file.is_file():
            results = _read_json(file)
            try:
                scores = results["scores"]
                points.append(StagePoint(name, float(scores["average"]) / 100, int(results["num_tasks"])))
            except (KeyError, TypeError, ValueError):
                raise ReportInputError(f"{file}: not an evaluation's results.json (no scores.average)") from None
    return tuple(points)


def load_eval(path: Path) -> EvalRecord:
    results_path = path / RESULTS_FILE
    results: EvalResults = _validated(EvalResults, _read_json(results_path), results_path)
    if not results.schema_.startswith(EVAL_SCHEMA_PREFIX):
        raise ReportInputError(f"{results_path}: schema {results.schema_!r} is not {EVAL_SCHEMA_PREFIX}N")
    for name in ("trajectories.parquet", "diagnoses.parquet"):
        if (path / name).exists():
            _check_parquet(path / name)
    diagnoses = path / "diagnoses.parquet"
    label_counts = _label_counts(diagnoses) if diagnoses.exists() else {}
    notes = []
    counted = sum(score.total for score in results.scores.per_category.values())
    if counted != results.num_tasks:
        notes.append(f"categories count {counted} tasks, num_tasks says {results.num_tasks} (unfinished evaluation?)")
    return EvalRecord(path, results, tuple(notes), label_counts)


def is_run(path: Path) -> bool:
    return (path / ITERATIONS_DIR).is_dir() or (path / "interfaces").is_dir() or (path / RUN_CONFIG_FILE).is_file()


def load_input(path: str | Path) -> RunRecord | EvalRecord:
    """A run or an evaluation directory, read whole; `ReportInputError` for anything else."""
    path = Path(path)
    if not path.is_dir():
        raise ReportInputError(f"{path} is not a directory (give a training run or an evaluation output directory)")
    if (path / RESULTS_FILE).is_file():
        return load_eval(path)
    if is_run(path):
        return load_run(path)
    raise ReportInputError(
        f"{path} is neither a training run (iterations/, interfaces/) nor an evaluation ({RESULTS_FILE})"
    )
