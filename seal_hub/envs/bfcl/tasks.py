"""BFCL v3 multi-turn tasks, read from the installed `bfcl-eval` package data (the `bfcl` extra).

The four multi-turn categories (base, miss_func, miss_param, long_context; 200 tasks each) ship inside
`bfcl_eval/data` as JSON lines (file names say `BFCL_v4_...`: BFCL v4 carries the v3 multi-turn set
unchanged). Nothing is copied into this repo. bfcl-eval is imported when tasks are read, not with this module
(`seal_hub.envs.bfcl.extra`). Each task becomes a frozen `Task`; its ground-truth calls,
which BFCL writes as Python call strings (`sort('final_report.pdf')`), are parsed with `ast` into structured
`ToolCall`s with named arguments, never evaluated.

Not covered here: executing anything (see `episode.py`) and the tool schemas (see `tools.py`).
"""

from __future__ import annotations

import ast
import inspect
import json
from dataclasses import dataclass
from functools import cache
from importlib import import_module, resources
from types import MappingProxyType
from typing import Any, Literal

from seal_hub.envs.bfcl.extra import require_bfcl_eval
from seal_hub.envs.protocol import Message, ToolCall

Category = Literal["base", "miss_func", "miss_param", "long_context"]
CATEGORIES: tuple[Category, ...] = ("base", "miss_func", "miss_param", "long_context")
_QUESTION_FILE = "BFCL_v4_multi_turn_{category}.json"
_ANSWER_FILE = "possible_answer/BFCL_v4_multi_turn_{category}.json"


@cache
def additional_function_prompt() -> str:
    """The user message BFCL's function-calling handlers send at a miss_func turn, when withheld tools appear."""
    require_bfcl_eval()
    from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC

    return DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC


class TaskDataError(ValueError):
    """The BFCL package data does not have the shape this module expects."""


@dataclass(frozen=True, eq=False)
class Task:
    """One BFCL multi-turn task.

    `turns[t]` holds the user messages of turn t; it is empty at a miss_func turn where withheld tools are
    revealed (`withheld_until[t]` names them). `ground_truth[t]` are the calls that solve turn t (empty where
    the right answer is to make no call). `initial_config` is BFCL's scenario, read-only by convention:
    the episode copies it before loading.
    """

    id: str
    category: Category
    turns: tuple[tuple[Message, ...], ...]
    involved_classes: tuple[str, ...]
    excluded_functions: frozenset[str]
    withheld_until: MappingProxyType[int, tuple[str, ...]]
    initial_config: MappingProxyType[str, Any]
    ground_truth: tuple[tuple[ToolCall, ...], ...]
    ground_truth_source: tuple[tuple[str, ...], ...]  # BFCL's original call strings
    path: tuple[str, ...] = ()

    @property
    def num_turns(self) -> int:
        return len(self.turns)

    @property
    def long_context(self) -> bool:
        """BFCL loads long-context scenarios (extra files, records) for this category."""
        return self.category == "long_context"

    def user_messages(self, turn: int) -> tuple[Message, ...]:
        """The messages that open turn `turn`, as BFCL's FC handlers send them."""
        if not self.turns[turn] and turn in self.withheld_until:
            return (Message("user", additional_function_prompt()),)
        return self.turns[turn]

    def raw_entry(self) -> dict[str, Any]:
        """The task as a BFCL test entry (what `multi_turn_checker` takes)."""
        return {
            "id": self.id,
            "initial_config": json.loads(json.dumps(dict(self.initial_config))),
            "involved_classes": list(self.involved_classes),
            "question": [[{"role": m.role, "content": m.content} for m in turn] for turn in self.turns],
        }


@cache
def api_class(class_name: str) -> type:
    """BFCL's API class for a class name in a task's `involved_classes`."""
    require_bfcl_eval()
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

    try:
        module = import_module(CLASS_FILE_PATH_MAPPING[class_name])
    except KeyError:
        raise TaskDataError(f"unknown BFCL API class {class_name!r}") from None
    return getattr(module, class_name)


def is_stateless(class_name: str) -> bool:
    require_bfcl_eval()
    from bfcl_eval.constants.executable_backend_config import STATELESS_CLASSES

    return class_name in STATELESS_CLASSES


def _data_file(relative: str):
    require_bfcl_eval()
    return resources.files("bfcl_eval").joinpath("data", relative)


def _read_jsonl(relative: str) -> list[dict[str, Any]]:
    text = _data_file(relative).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def parse_call_string(source: str, involved_classes: tuple[str, ...]) -> ToolCall:
    """Parse one BFCL ground-truth call string into a `ToolCall` with named arguments.

    Positional arguments get their names from the method's signature on the involved class that owns it.
    Raises `TaskDataError` on anything that is not a plain call with literal arguments.
    """
    try:
        node = ast.parse(source.strip(), mode="eval").body
    except SyntaxError as exc:
        raise TaskDataError(f"ground-truth call is not Python: {source!r}") from exc
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise TaskDataError(f"ground-truth entry is not a plain function call: {source!r}")
    name = node.func.id
    arguments: dict[str, Any] = {}
    if node.args:
        owner = next((c for c in involved_classes if callable(getattr(api_class(c), name, None))), None)
        if owner is None:
            raise TaskDataError(f"no involved class has a method {name!r} (in {source!r})")
        params = [p for p in inspect.signature(getattr(api_class(owner), name)).parameters if p != "self"]
        if len(node.args) > len(params):
            raise TaskDataError(f"too many positional arguments in {source!r}")
        for param, value in zip(params, node.args, strict=False):
            arguments[param] = ast.literal_eval(value)
    for keyword in node.keywords:
        if keyword.arg is None:
            raise TaskDataError(f"**kwargs in ground truth: {source!r}")
        arguments[keyword.arg] = ast.literal_eval(keyword.value)
    return ToolCall(name=name, arguments=arguments)


def _build_task(entry: dict[str, Any], answer: dict[str, Any], category: Category) -> Task:
    if entry["id"] != answer["id"]:
        raise TaskDataError(f"question and answer files disagree: {entry['id']} vs {answer['id']}")
    classes = tuple(entry["involved_classes"])
    source = tuple(tuple(turn) for turn in answer["ground_truth"])
    if len(source) != len(entry["question"]):
        raise TaskDataError(f"{entry['id']}: {len(source)} ground-truth turns for {len(entry['question'])} turns")
    return Task(
        id=entry["id"],
        category=category,
        turns=tuple(tuple(Message(m["role"], m["content"]) for m in turn) for turn in entry["question"]),
        involved_classes=classes,
        excluded_functions=frozenset(entry.get("excluded_function") or ()),
        withheld_until=MappingProxyType(
            {int(turn): tuple(names) for turn, names in (entry.get("missed_function") or {}).items()}
        ),
        initial_config=MappingProxyType(entry.get("initial_config") or {}),
        ground_truth=tuple(tuple(parse_call_string(s, classes) for s in turn) for turn in source),
        ground_truth_source=source,
        path=tuple(entry.get("path") or ()),
    )


def load_tasks(categories: tuple[Category, ...] = CATEGORIES) -> dict[str, Task]:
    """All tasks of the given categories, keyed by id, in BFCL's file order."""
    tasks: dict[str, Task] = {}
    for category in categories:
        if category not in CATEGORIES:
            raise ValueError(f"unknown BFCL multi-turn category {category!r}; choose from {CATEGORIES}")
        questions = _read_jsonl(_QUESTION_FILE.format(category=category))
        answers = _read_jsonl(_ANSWER_FILE.format(category=category))
        if len(questions) != len(answers):
            raise TaskDataError(f"{category}: {len(questions)} questions but {len(answers)} answers")
        for entry, answer in zip(questions, answers, strict=True):
            tasks[entry["id"]] = _build_task(entry, answer, category)
    return tasks
