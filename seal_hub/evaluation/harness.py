"""The evaluation harness: run a policy (or the oracle) over a suite's tasks, resumably, and score it.

`run_evaluation` opens the output directory (`EvalStore`: a new one records the settings, an existing one
must hold the same), reads the tasks already evaluated there, hands only the missing ones to the runner, and
writes each finished task's record at once. A progress bar shows tasks done, tasks per second and the
running success rate. When every task has a record it writes the Parquet records, `results.md` and
`results.json` (`seal_hub.evaluation.results`) and returns the result.

Rolling out with the batched engine, and the paper's protocol, are the runner's and `EvalProtocol`'s business;
this module only orders, stores and scores. Not covered: loading models, adapters or interfaces (the CLI does
that and describes them in the `EvalSpec`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from seal_hub.envs.suite import Suite, SuiteTask
from seal_hub.evaluation.results import EvalSpec, write_outputs
from seal_hub.evaluation.runners import Runner
from seal_hub.evaluation.scores import Scores
from seal_hub.evaluation.store import EvalStore
from seal_hub.rollout.records import Trajectory


@dataclass(frozen=True)
class EvalResult:
    scores: Scores
    trajectories: list[Trajectory]  # in task order
    results: dict[str, Any]  # what results.json holds
    out: Path
    ran: int  # tasks evaluated by this call (the others were read back from an earlier run)


def diagnosis_records(suite: Suite, trajectories: Sequence[Trajectory]) -> list[dict] | None:
    """The `diagnoses` rows of the trajectories, by the suite's own labels; None for a suite without turn labels."""
    if not suite.turn_labels:
        return None
    from seal_hub.diagnosis.records import diagnosis_rows

    return diagnosis_rows(trajectories, [suite.diagnose(t, suite.task(t.task_id)) for t in trajectories])


def run_evaluation(
    suite: Suite, tasks: Sequence[SuiteTask], runner: Runner, spec: EvalSpec, out: str | Path, progress: bool = True
) -> EvalResult:
    """Evaluate `tasks` with `runner` into `out` (resuming what is there); see the module docstring."""
    ids = [task.id for task in tasks]
    repeated = sorted({i for i in ids if ids.count(i) > 1}) if len(set(ids)) != len(ids) else []
    if repeated:
        raise ValueError(f"the task list repeats {', '.join(repeated[:5])}: an evaluation scores each task once")
    if not tasks:
        raise ValueError(f"no tasks to evaluate in suite {suite.name!r} ({spec.split} split)")
    store = EvalStore(out)
    store.open(spec.settings())
    done = store.done(ids)
    resumed = len(done)
    missing = [task for task in tasks if task.id not in done]
    passed = sum(t.passed for t in done.values())
    bar = tqdm(total=len(tasks), initial=len(done), desc=f"eval {suite.name}", unit="task", disable=not progress)

    def finished(trajectory: Trajectory) -> None:
        nonlocal passed
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
    root = Path(out)
    results = write_outputs(
        root, spec, scores, trajectories, diagnosis_records(suite, trajectories), wall_seconds=wall, resumed=resumed
    )
    return EvalResult(scores, trajectories, results, root, ran=len(missing))
