"""The BFCL memory suite (`bfcl-memory`): 155 questions on each of 3 backends, with the scripted oracle.

Categories are the backends (`memory_kv`, `memory_rec_sum`, `memory_vector`); ids are bfcl-eval's. The
oracle is a script (`oracle.py`): no gold write sequence exists. Its per-scenario dry runs are built on first
use and kept (one small memory per backend and scenario).

It cannot train (`not_trainable`): its prerequisite turns pass by construction and only the final answer is
scored, so a failure profile would be mostly `pass` with one unexplained miss (no turn labels); its chains run to
~25k tokens; and it is the paper's out-of-distribution test. Every split is a test split.
"""

from __future__ import annotations

from typing import Any

from seal_hub.envs.bfcl_memory.episode import MemoryEpisode
from seal_hub.envs.bfcl_memory.oracle import MemoryOracle
from seal_hub.envs.bfcl_memory.tasks import BACKENDS, MemoryTask, load_tasks
from seal_hub.envs.protocol import Action
from seal_hub.envs.suite import SuiteCard
from seal_hub.envs.task_table import TaskTable


class BfclMemorySuite(TaskTable):
    """BFCL v4 memory: tasks by id, isolated episodes, the scripted oracle."""

    name = "bfcl-memory"
    tool_errors = True
    not_trainable = (
        "only its final answer is scored (the prerequisite turns pass by construction), so its turns "
        "do not map to the failure labels, and its tasks are an out-of-distribution test set"
    )
    card = SuiteCard.plain("bfcl-memory")

    def __init__(self, tasks: dict[str, MemoryTask] | None = None, backends: tuple[str, ...] = BACKENDS) -> None:
        self.tasks: dict[str, MemoryTask] = tasks if tasks is not None else load_tasks(backends)
        self.categories: tuple[str, ...] = tuple(dict.fromkeys(t.category for t in self.tasks.values()))
        self._oracles: dict[tuple[str, str], MemoryOracle] = {}

    def oracle_steps(self, task: MemoryTask) -> list[list[Action]]:
        """The scripted oracle's actions; the question turn ends with its own plain answer message."""
        key = (task.backend, task.scenario)
        if key not in self._oracles:
            group = [t for t in self.tasks.values() if (t.backend, t.scenario) == key]
            self._oracles[key] = MemoryOracle(group)
        return self._oracles[key].steps(task)

    def episode(self, task: MemoryTask | str, config: Any = None) -> MemoryEpisode:
        """A new episode of `task`; only `max_steps_per_turn` is read from `config` (if it has one)."""
        task = self.task(task) if isinstance(task, str) else task
        return MemoryEpisode(task, config)
