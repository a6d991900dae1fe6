"""The BFCL multi-turn suite: its tasks, and a factory of isolated episodes that share read-only truth.

A `BfclSuite` owns the 800 tasks and, per task, the `GroundTruthTrace` (outputs and states after each
ground-truth turn), computed the first time an episode of that task needs it and then reused by every
rollout of the task. That memo is the only thing episodes share, and they only read it; all mutable state
(API instances, outputs, verdicts) lives on each `Episode`.

The suite trains: its turns are labelled by `labels.py`, its warm-up replays each task's ground truth (the calls of
every turn, then a closing reply, or an abstention where the turn makes no call), its tools execute and can fail,
its default split is the paper's, and cards name it BFCL v3 multi-turn.

Not covered: the agent's side of the conversation (`seal_hub.rollout`).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from seal_hub.envs.bfcl.episode import Episode, EpisodeConfig
from seal_hub.envs.bfcl.labels import diagnose_multi_turn
from seal_hub.envs.bfcl.tasks import CATEGORIES, Category, Task, load_tasks
from seal_hub.envs.bfcl.verifier import GroundTruthTrace
from seal_hub.envs.episode import EpisodeSettings
from seal_hub.envs.protocol import Action
from seal_hub.envs.reference import ABSTAIN, CLOSING, WarmupScript
from seal_hub.envs.suite import SuiteCard
from seal_hub.envs.task_table import TaskTable

if TYPE_CHECKING:
    from seal_hub.diagnosis import RolloutDiagnosis
    from seal_hub.rollout.records import Trajectory


class BfclSuite(TaskTable):
    """BFCL v3 multi-turn: tasks by id, and episodes on them."""

    name = "bfcl"
    categories: tuple[str, ...] = CATEGORIES
    default_split = "paper"
    turn_labels = True
    tool_errors = True
    not_trainable = None
    card = SuiteCard("bfcl_v3_multi_turn", "BFCL v3 multi-turn")

    def __init__(self, tasks: dict[str, Task] | None = None, categories: tuple[Category, ...] = CATEGORIES) -> None:
        self.tasks: dict[str, Task] = tasks if tasks is not None else load_tasks(categories)
        self._traces: dict[str, GroundTruthTrace] = {}
        self._lock = threading.Lock()

    def ground_truth(self, task: Task | str) -> GroundTruthTrace:
        """The task's ground-truth trace, computed once."""
        task = self.task(task) if isinstance(task, str) else task
        trace = self._traces.get(task.id)
        if trace is None:
            trace = GroundTruthTrace.compute(task)
            with self._lock:
                trace = self._traces.setdefault(task.id, trace)
        return trace

    def split_ids(self, split: str, split_file: str | None = None, seed: int = 0) -> tuple[str, ...]:
        """Task ids of `split` (train, test or all): of the paper's split by default, else of `split_file`
        (a path, or 'stratified' for the stratified split seeded by `seed`)."""
        from seal_hub.envs.bfcl.splits import resolve_split

        if split == "all" and split_file is None:
            return tuple(self.tasks)
        return resolve_split(split_file, known_ids=set(self.tasks), seed=seed, tasks=self.tasks).ids(split)

    def oracle_steps(self, task: Task) -> list[list[Action]]:
        """The ground truth as actions: one calling action per turn that has calls (BFCL's replay shape)."""
        return [[Action(tool_calls=calls)] if calls else [] for calls in task.ground_truth]

    def episode(self, task: Task | str, config: EpisodeSettings | None = None) -> Episode:
        """A new, isolated episode of `task` (call `reset()` to start it)."""
        task = self.task(task) if isinstance(task, str) else task
        return Episode(task, self.ground_truth(task), config)

    def diagnose(self, trajectory: Trajectory, task: Task) -> RolloutDiagnosis:
        """One label per user turn of the task (`seal_hub.envs.bfcl.labels`)."""
        return diagnose_multi_turn(trajectory, task)

    def warmup_script(self, task: Task) -> WarmupScript:
        """The ground truth to teach: per turn its calls (hidden tools allowed, as in the ground truth), then a
        closing reply, or the abstention where the turn makes no call."""
        replies: list[Action] = []
        for calls in task.ground_truth:
            if calls:
                replies.append(Action(tool_calls=calls))
            replies.append(Action(content=CLOSING if calls else ABSTAIN))
        return WarmupScript(self.episode(task, EpisodeConfig(allow_hidden_tools=True)), tuple(replies))
