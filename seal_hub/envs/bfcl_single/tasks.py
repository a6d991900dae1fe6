"""BFCL single-turn tasks (AST and relevance categories), read from the installed `bfcl-eval` package data.

Eleven categories: simple (Python), multiple, parallel, parallel_multiple, their four `live_` variants, and
the relevance ones (irrelevance, live_irrelevance: the right answer is no call; live_relevance: any call).
Entries come through bfcl-eval's own `load_dataset_entry` (with the language hint BFCL adds to every function
description at inference time) and its `load_ground_truth_entry`; the function docs become chat-template
tools with the converter the multi-turn suite uses. Nothing is copied into this repo.

Not covered: BFCL's Java and JavaScript `simple_` categories (their answers are checked as Java/JS source
text, which a JSON tool-calling policy does not produce) and format sensitivity (a prompt-format study).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Any

from seal_hub.envs.bfcl.extra import require_bfcl_eval
from seal_hub.envs.bfcl.tools import to_json_schema
from seal_hub.envs.protocol import Message

# our category name -> bfcl-eval's test category (the data file's name and what its checker dispatches on)
BFCL_CATEGORY: MappingProxyType[str, str] = MappingProxyType(
    {
        "simple": "simple_python",
        "multiple": "multiple",
        "parallel": "parallel",
        "parallel_multiple": "parallel_multiple",
        "live_simple": "live_simple",
        "live_multiple": "live_multiple",
        "live_parallel": "live_parallel",
        "live_parallel_multiple": "live_parallel_multiple",
        "irrelevance": "irrelevance",
        "live_irrelevance": "live_irrelevance",
        "live_relevance": "live_relevance",
    }
)
CATEGORIES: tuple[str, ...] = tuple(BFCL_CATEGORY)
ABSTAIN_CATEGORIES = frozenset({"irrelevance", "live_irrelevance"})  # passing means making no call
RELEVANCE_CATEGORIES = frozenset({"live_relevance"})  # passing means making any call


class SingleTaskDataError(ValueError):
    """The bfcl-eval package data does not have the shape this module expects."""


@dataclass(frozen=True, eq=False)
class SingleTask:
    """One BFCL single-turn question: its messages, the offered functions, and (AST categories) the answer key.

    `possible_answer` is BFCL's key: per expected call `{name: {argument: [accepted values]}}`, where `""`
    among the accepted values marks an argument that may be left out. None for the relevance categories.
    """

    id: str
    category: str
    messages: tuple[Message, ...]
    functions: tuple[MappingProxyType[str, Any], ...]  # BFCL's function docs (what the checker reads)
    tools: tuple[dict[str, Any], ...]  # the same, as chat-template JSON-schema tools
    possible_answer: tuple[MappingProxyType[str, Any], ...] | None

    @property
    def bfcl_category(self) -> str:
        return BFCL_CATEGORY[self.category]

    @property
    def expects_calls(self) -> bool:
        return self.category not in ABSTAIN_CATEGORIES


def _task(category: str, entry: dict[str, Any], answer: dict[str, Any] | None) -> SingleTask:
    try:
        turns = entry["question"]
        messages = tuple(Message(str(m["role"]), str(m["content"])) for m in turns[0])
        functions = entry["function"]
        if not isinstance(functions, list) or not messages:
            raise TypeError("no functions or no messages")
        tools = tuple(to_json_schema(doc) for doc in functions)
        key = None
        if answer is not None:
            if answer["id"] != entry["id"]:
                raise ValueError(f"answer {answer['id']!r} is not aligned with question {entry['id']!r}")
            key = tuple(MappingProxyType(call) for call in answer["ground_truth"])
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise SingleTaskDataError(
            f"bfcl-eval data for {category} entry {entry.get('id', '?')!r} is malformed ({exc}); "
            "reinstall the pinned bfcl-eval: pip install --force-reinstall 'bfcl-eval==2026.3.23'"
        ) from None
    return SingleTask(
        id=entry["id"],
        category=category,
        messages=messages,
        functions=tuple(MappingProxyType(doc) for doc in functions),
        tools=tools,
        possible_answer=key,
    )


@cache
def load_category(category: str) -> tuple[SingleTask, ...]:
    """Every task of one category, in BFCL's order."""
    require_bfcl_eval()
    from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

    if category not in BFCL_CATEGORY:
        raise ValueError(f"unknown BFCL single-turn category {category!r}; choose one of: {', '.join(CATEGORIES)}")
    name = BFCL_CATEGORY[category]
    try:
        entries = load_dataset_entry(name, include_prereq=False, include_language_specific_hint=True)
        keyed = category not in ABSTAIN_CATEGORIES | RELEVANCE_CATEGORIES
        answers = load_ground_truth_entry(name) if keyed else [None] * len(entries)
    except (OSError, ValueError) as exc:
        raise SingleTaskDataError(
            f"cannot read bfcl-eval data for {category} ({exc}); "
            "reinstall the pinned bfcl-eval: pip install --force-reinstall 'bfcl-eval==2026.3.23'"
        ) from None
    if len(answers) != len(entries):
        raise SingleTaskDataError(
            f"bfcl-eval data for {category}: {len(entries)} questions but {len(answers)} answers"
        )
    return tuple(_task(category, entry, answer) for entry, answer in zip(entries, answers, strict=True))


def load_tasks(categories: tuple[str, ...] = CATEGORIES) -> dict[str, SingleTask]:
    """Tasks of the given categories by id, category by category."""
    return {task.id: task for category in categories for task in load_category(category)}
