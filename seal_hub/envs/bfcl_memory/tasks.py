"""BFCL v4 memory tasks: 155 questions x 3 memory backends, each with its scenario's prerequisite conversations.

bfcl-eval's memory category has five scenarios (student, customer, finance, healthcare, notetaker). Each has
a chain of prerequisite conversations (37 in all) in which a user tells the agent about themselves while the
agent may write to a memory backend (`kv`: key-value core/archival memory with BM25 key search; `rec_sum`:
one recursive-summary text; `vector`: core/archival memory with embedding search), and questions about what
was said (155 in all), answered after the chain, from memory. A question passes when bfcl-eval's
`agentic_checker` finds one of the accepted answers in the agent's final message.

Entries come through bfcl-eval's own `load_dataset_entry`, so ids are BFCL's (`memory_kv_0-customer-0`),
each question carries BFCL's answer-format system prompt, and the function docs are the backend's.

Not covered: running anything (`episode.py`), the memory instruction prompt (added when a conversation starts,
since it shows the memory's content at that moment).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Any

from seal_hub.envs.bfcl.extra import require_bfcl_eval
from seal_hub.envs.bfcl.tools import to_json_schema
from seal_hub.envs.protocol import Message

BACKENDS: tuple[str, ...] = ("kv", "rec_sum", "vector")
CATEGORIES: tuple[str, ...] = tuple(f"memory_{backend}" for backend in BACKENDS)
Turn = tuple[Message, ...]


class MemoryDataError(ValueError):
    """The bfcl-eval memory data does not have the shape this module expects."""


@dataclass(frozen=True)
class Conversation:
    """One prerequisite conversation (BFCL entry `memory_<backend>_prereq_<n>-<scenario>-<k>`): its user turns."""

    id: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True, eq=False)
class MemoryTask:
    """One question on one backend, with the conversations that come before it.

    The episode's user turns are every turn of every conversation in `prerequisites`, in order, then the
    question's one turn. `answers` are BFCL's accepted answers; `source` quotes where the user said it.
    """

    id: str
    category: str  # memory_kv, memory_rec_sum or memory_vector
    backend: str
    scenario: str
    prerequisites: tuple[Conversation, ...]
    question: Turn
    answers: tuple[str, ...]
    source: str
    functions: tuple[MappingProxyType[str, Any], ...]
    tools: tuple[dict[str, Any], ...]

    @property
    def class_name(self) -> str:
        return f"MemoryAPI_{self.backend}"

    @property
    def conversations(self) -> tuple[tuple[Turn, ...], ...]:
        """Every conversation's turns, the question last (as a conversation of one turn)."""
        return tuple(c.turns for c in self.prerequisites) + ((self.question,),)

    @property
    def num_turns(self) -> int:
        return sum(len(c.turns) for c in self.prerequisites) + 1


def _turns(entry: dict[str, Any]) -> tuple[Turn, ...]:
    return tuple(tuple(Message(str(m["role"]), str(m["content"])) for m in turn) for turn in entry["question"])


def _fail(backend: str, exc: Exception) -> MemoryDataError:
    return MemoryDataError(
        f"bfcl-eval memory data for backend {backend} is malformed or missing ({exc}); "
        "reinstall the pinned bfcl-eval: pip install --force-reinstall 'bfcl-eval==2026.3.23'"
    )


@cache
def load_backend(backend: str) -> tuple[MemoryTask, ...]:
    """Every question of one backend, in BFCL's order."""
    require_bfcl_eval()
    from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

    if backend not in BACKENDS:
        raise ValueError(f"unknown memory backend {backend!r}; choose one of: {', '.join(BACKENDS)}")
    category = f"memory_{backend}"
    try:
        entries = load_dataset_entry(category, include_prereq=True, include_language_specific_hint=False)
        answers = {a["id"]: a for a in load_ground_truth_entry(category)}
        prereq: dict[str, list[Conversation]] = {}
        for entry in entries:
            if "prereq" in entry["id"]:
                prereq.setdefault(entry["scenario"], []).append(Conversation(entry["id"], _turns(entry)))
        for chain in prereq.values():
            chain.sort(key=lambda c: int(c.id.rsplit("-", 1)[1]))
        tasks = []
        for entry in entries:
            if "prereq" in entry["id"]:
                continue
            key = answers[entry["id"].replace(category, "memory", 1)]
            [question] = _turns(entry)
            functions = tuple(MappingProxyType(doc) for doc in entry["function"])
            tasks.append(
                MemoryTask(
                    id=entry["id"],
                    category=category,
                    backend=backend,
                    scenario=entry["scenario"],
                    prerequisites=tuple(prereq[entry["scenario"]]),
                    question=question,
                    answers=tuple(str(a) for a in key["ground_truth"]),
                    source=str(key.get("source", "")),
                    functions=functions,
                    tools=tuple(to_json_schema(dict(doc)) for doc in functions),
                )
            )
    except (OSError, KeyError, IndexError, TypeError, ValueError) as exc:
        raise _fail(backend, exc) from None
    return tuple(tasks)


def load_tasks(backends: tuple[str, ...] = BACKENDS) -> dict[str, MemoryTask]:
    return {task.id: task for backend in backends for task in load_backend(backend)}
