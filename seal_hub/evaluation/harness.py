"""The evaluation harness: run a policy (or the oracle) over a suite's tasks, resumably, and score it.

`evaluate_policy` is the one evaluation path of a model: given its generation backend, tasks, an `EvalProtocol`
and an interface, it builds the rollout engine under the protocol (the parser style resolved from the chat
template, so the record names the style used) and runs the harness. `seal-hub eval`, the training script's
held-out comparison, the trainer's periodic held-out evaluation and the experiment all call it.

`run_evaluation` is the harness under it (and under the oracle, `OracleRunner`). With an output directory it opens
it (`EvalStore`: a new one records the settings, an existing one must hold the same), reads the tasks already
evaluated there, hands only the missing ones to the runner, and writes each finished task's record at once; when
every task has a record it writes the Parquet records, `results.md` and `results.json`
(`seal_hub.evaluation.results`). Without one (`out=None`: the trainer's evaluation every `eval_every_steps`) it
scores in memory and writes nothing. A progress bar shows tasks done, tasks per second and the running success
rate.

Rolling out with the batched engine, and the paper's protocol, are the engine's and `EvalProtocol`'s business;
this module only builds, orders, stores and scores. Not covered: loading models, adapters or interfaces (the
callers do that and describe them in the `EvalSpec`), the generation backend (`seal_hub.generation`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from seal_hub.envs.suite import Suite, SuiteTask
from seal_hub.evaluation.protocol import EvalProtocol
from seal_hub.evaluation.results import EvalSpec, write_outputs
from seal_hub.evaluation.runners import ModelRunner, Runner
from seal_hub.evaluation.scores import Scores
from seal_hub.evaluation.store import EvalStore
from seal_hub.models.parser_style import resolve_parser_style
from seal_hub.rollout.engine import DONE_FORMAT, PolicyInfo, RolloutEngine
from seal_hub.rollout.records import Trajectory

if TYPE_CHECKING:
    from seal_hub.generation.backend import GenerationBackend
    from seal_hub.interface import InterfaceSnapshot


@dataclass(frozen=True)
class EvalResult:
    scores: Scores
    trajectories: list[Trajectory]  # in task order
    results: dict[str, Any]  # what results.json holds ({} when scored in memory)
    out: Path | None  # None: scored in memory, nothing written
    ran: int  # tasks evaluated by this call (the others were read back from an earlier run)
    wall_seconds: float = 0.0  # the time of this call's runs
    protocol: EvalProtocol | None = None  # the protocol a model was scored under (`evaluate_policy`)


def diagnosis_records(suite: Suite, trajectories: Sequence[Trajectory]) -> list[dict] | None:
    """The `diagnoses` rows of the trajectories, by the suite's own labels; None for a suite without turn labels."""
    if not suite.turn_labels:
        return None
    from seal_hub.diagnosis.records import diagnosis_rows

    return diagnosis_rows(trajectories, [suite.diagnose(t, suite.task(t.task_id)) for t in trajectories])


def evaluate_policy(
    backend: GenerationBackend,
    tokenizer,
    policy: PolicyInfo,
    suite: Suite,
    tasks: Sequence[SuiteTask],
    protocol: EvalProtocol,
    interface: InterfaceSnapshot,
    spec: EvalSpec | None = None,
    out: str | Path | None = None,
    progress: bool = False,
) -> EvalResult:
    """Score `policy` (generating with `backend`) on `tasks` under `protocol` and `interface`: the one evaluation
    path of a model. With `out`, a resumable evaluation directory described by `spec` (its ``protocol`` is filled
    in here, with the parser style resolved); without, scored in memory (`spec` not needed)."""
    protocol = dataclasses.replace(protocol, parser_style=resolve_parser_style(tokenizer, protocol.parser_style))
    if out is not None:
        if spec is None:
            raise ValueError("an evaluation written to a directory needs its EvalSpec (what was evaluated)")
        spec = dataclasses.replace(spec, protocol=protocol.as_dict())
    engine = RolloutEngine(backend, tokenizer, suite, protocol.rollout_config(), policy, interface)
    result = run_evaluation(suite, tasks, ModelRunner(engine), spec, out, progress=progress)
    return dataclasses.replace(result, protocol=protocol)


def run_evaluation(
    suite: Suite,
    tasks: Sequence[SuiteTask],
    runner: Runner,
    spec: EvalSpec | None,
    out: str | Path | None,
    progress: bool = True,
) -> EvalResult:
    """Evaluate `tasks` with `runner` into `out` (resuming what is there), or in memory when `out` is None; see the
    module docstring."""
    ids = [task.id for task in tasks]
    repeated = sorted({i for i in ids if ids.count(i) > 1}) if len(set(ids)) != len(ids) else []
    if repeated:
        raise ValueError(f"the task list repeats {', '.join(repeated[:5])}: an evaluation scores each task once")
    if not tasks:
        split = f" ({spec.split} split)" if spec is not None else ""
        raise ValueError(f"no tasks to evaluate in suite {suite.name!r}{split}")
    store = EvalStore(out) if out is not None else None
    if store is not None:
        if spec is None:
            raise ValueError("an evaluation written to a directory needs its EvalSpec (what was evaluated)")
        store.open(spec.settings())
    done = store.done(ids) if store is not None else {}
    resumed = len(done)
    missing = [task for task in tasks if task.id not in done]
    passed = sum(t.passed for t in done.values())
    bar = tqdm(
        total=len(tasks),
        initial=len(done),
        desc=f"eval {suite.name}",
        unit="tasks",
        bar_format=DONE_FORMAT,
        disable=not progress,
    )

    def finished(trajectory: Trajectory) -> None:
        nonlocal passed
        if store is not None:
            store.add(trajectory)
        done[trajectory.task_id] = trajectory
        passed += trajectory.passed
        bar.update(1)
        bar.set_postfix(success=f"{100.0 * passed / len(done):.1f}%", refresh=False)

    start = time.perf_counter()
    try:
        if done:
            bar.set_postfix(success=f"{100.0 * passed / len(done):.1f}%", refresh=False)
        runner.run(missing, finished)
    finally:
        bar.close()
    wall = time.perf_counter() - start
    absent = [i for i in ids if i not in done]
    if absent:
        raise RuntimeError(f"the runner returned no record for {len(absent)} task(s), e.g. {absent[0]}")
    trajectories = [done[i] for i in ids]
    scores = Scores.of(((t.category, t.passed) for t in trajectories), suite.categories)
    if out is None:
        return EvalResult(scores, trajectories, {}, None, ran=len(missing), wall_seconds=wall)
    root = Path(out)
    results = write_outputs(
        root,
        spec,
        scores,
        trajectories,
        diagnosis_records(suite, trajectories),
        wall_seconds=wall,
        resumed=resumed,
        card=suite.card,
    )
    return EvalResult(scores, trajectories, results, root, ran=len(missing), wall_seconds=wall)
