"""The tau2 telecom suite (`tau2-telecom`, solo mode): tasks, splits, episodes, and the gold actions as oracle.

Splits: `test` and `all` are tau2's `base` set (114 tasks, the benchmark); `tau2:train`, `tau2:test` and
`tau2:small` are tau2's own subdivisions; a category (`mms_issue`, `mobile_data_issue`, `service_issue`)
is its tasks; a split file picks ids by hand. The oracle replays each task's gold actions (tau2's
`evaluation_criteria.actions`, agent and phone actions alike, in order) and then stops.

It cannot train (`not_trainable`): its verdict is one end-of-episode check by tau2's evaluator (reward only, no
expected calls per turn to label a turn by), and its 114 tasks are the paper's out-of-distribution test, with no
train split.

Importing this module needs no tau2; building the suite does (`require_tau2` says how to install it).
"""

from __future__ import annotations

from typing import Any

from seal_hub.envs.protocol import Action, ToolCall
from seal_hub.envs.suite import SuiteCard, SuiteError
from seal_hub.envs.task_table import TaskTable
from seal_hub.envs.tau2_telecom.episode import STOP_TOOL, TelecomEpisode
from seal_hub.envs.tau2_telecom.tasks import DEFAULT_SPLIT, TelecomTask, load_tasks, telecom_splits

TAU2_SPLITS = ("tau2:train", "tau2:test", "tau2:small")


class Tau2TelecomSuite(TaskTable):
    """tau2-bench telecom, solo: tasks by id, isolated episodes, the gold-action oracle."""

    name = "tau2-telecom"
    tool_errors = True
    not_trainable = (
        "its verdict is one end-of-episode check with no expected calls per turn to label, and its "
        "tasks are an out-of-distribution test set with no train split"
    )
    card = SuiteCard.plain("tau2-telecom")

    def __init__(self, tasks: dict[str, TelecomTask] | None = None) -> None:
        self.tasks: dict[str, TelecomTask] = tasks if tasks is not None else load_tasks(DEFAULT_SPLIT)
        self.categories: tuple[str, ...] = tuple(dict.fromkeys(t.category for t in self.tasks.values()))

    def split_ids(self, split: str, split_file: str | None = None, seed: int = 0) -> tuple[str, ...]:
        if split_file is None and split in TAU2_SPLITS:
            ids = telecom_splits()[split.split(":", 1)[1]]
            return tuple(i for i in ids if i in self.tasks)
        try:
            return super().split_ids(split, split_file, seed)
        except SuiteError as exc:
            raise SuiteError(f"{exc}, or one of tau2's: {', '.join(TAU2_SPLITS)}") from None

    def oracle_steps(self, task: TelecomTask) -> list[list[Action]]:
        """One turn: each gold action as one call, in order, then the stop call."""
        actions = [
            Action(tool_calls=(ToolCall(a.name, dict(a.arguments)),)) for a in task.tau2.evaluation_criteria.actions
        ]
        return [[*actions, Action(tool_calls=(ToolCall(STOP_TOOL, {}),))]]

    def episode(self, task: TelecomTask | str, config: Any = None) -> TelecomEpisode:
        """A new episode of `task`; the multi-turn suite's `config` does not apply (tau2 keeps its own limits)."""
        task = self.task(task) if isinstance(task, str) else task
        return TelecomEpisode(task, config)
