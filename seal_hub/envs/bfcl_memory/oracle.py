"""A scripted oracle for BFCL memory. No gold write sequence exists, so this is a script, not an answer key.

The script writes, during the prerequisite conversations, one note per question of the scenario: the
sentence BFCL quotes as the question's `source`, followed by the question's first accepted answer in
brackets, at the turn where the user says that sentence (the quote's pieces between its "..." elisions,
each found verbatim, up to typographic quotes and dashes, in one user message; a quote not found is never
written). At the question it reads the whole memory back and answers with all of it, so the figure measures
the write / persist-across-conversations / read path and the checker, not a policy's judgement:

- kv: `archival_memory_add(key, value)` with the quote's words as a snake_case key; at the question
  `archival_memory_list_keys()` and `archival_memory_retrieve(key)` of every key;
- rec_sum: `memory_append(text)` (with a newline: the backend joins appends with nothing); at the question
  `memory_retrieve()`;
- vector: `archival_memory_add(text)`; at the question `archival_memory_retrieve_all()`.

Its actions are fixed in advance (`oracle_steps`), so the answer text it gives comes from a dry run of the
same calls on a private backend: the backends are deterministic, and the replay gets the same results.
It misses a question whose quote is not found in the conversation (BFCL paraphrases some, e.g. the
notetaker's lists) or does not fit in memory. It ends the question turn itself with a plain answer message
(an `Action` without calls), which ends the episode; a harness must not add its own plain message then.

Not covered: what a good policy would write (anything it likes, in any words).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable
from typing import Any

from seal_hub.envs.bfcl_memory.backend import MemoryStore
from seal_hub.envs.bfcl_memory.tasks import MemoryTask
from seal_hub.envs.protocol import Action, ToolCall

_PLAIN = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "—": "-", "–": "-"})


def plain(text: str) -> str:
    """Text with typographic quotes and dashes made plain (sources and messages differ in these)."""
    return text.translate(_PLAIN)


def quote(task: MemoryTask) -> tuple[str, ...]:
    """The pieces of the task's source quote (split at BFCL's "..." elisions, quote marks trimmed)."""
    pieces = re.split(r"\.\.\.|…", plain(task.source))
    return tuple(p for p in (piece.strip(" \"',.;:") for piece in pieces) if len(p) > 3)


def _key(text: str, index: int) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())[:10]
    head = words[0] if words and words[0][0].isalpha() else "note"
    return "_".join([head, *words[1:], str(index)])[:120]


def _write(backend: str, text: str, index: int) -> ToolCall:
    if backend == "kv":
        return ToolCall("archival_memory_add", {"key": _key(text, index), "value": text})
    if backend == "rec_sum":
        return ToolCall("memory_append", {"text": text + "\n"})  # the backend joins appends with nothing
    return ToolCall("archival_memory_add", {"text": text})


class MemoryOracle:
    """Scripted actions for every question of one backend and scenario (the write plan is shared)."""

    def __init__(self, tasks: Iterable[MemoryTask]) -> None:
        tasks = list(tasks)
        first = tasks[0]
        self.backend, self.scenario = first.backend, first.scenario
        answers: dict[tuple[str, ...], list[str]] = {}  # quote pieces -> the first accepted answer of each task
        for task in tasks:
            if quote(task) and task.answers:
                answers.setdefault(quote(task), []).append(task.answers[0])
        quotes = list(answers)
        self.writes: list[list[ToolCall]] = []
        pending, written = list(quotes), 0
        for conversation in first.prerequisites:
            for turn in conversation.turns:
                said = plain("\n".join(m.content for m in turn if m.role == "user"))
                found = [q for q in pending if all(piece in said for piece in q)]
                pending = [q for q in pending if q not in found]
                calls = []
                for pieces in found:
                    note = f"{' ... '.join(pieces)} [{'; '.join(dict.fromkeys(answers[pieces]))}]"
                    calls.append(_write(self.backend, note, written))
                    written += 1
                self.writes.append(calls)
        self.store = MemoryStore(first.class_name, first.category, first.scenario)
        shutil.rmtree(self.store.folder, ignore_errors=True)  # nothing is flushed: the dry run needs no folder
        for calls in self.writes:
            for call in calls:
                getattr(self.store.instance, call.name)(**call.arguments)

    def _recall(self) -> tuple[list[Action], str]:
        """Read back everything the script wrote (the retrieval calls, and what they return)."""
        memory = self.store.instance
        if self.backend == "rec_sum":
            return [Action(tool_calls=(ToolCall("memory_retrieve", {}),))], json.dumps(memory.memory_retrieve())
        if self.backend == "vector":
            found = [entry["text"] for entry in memory.archival_memory_retrieve_all()["result"]]  # texts, not ids
            return [Action(tool_calls=(ToolCall("archival_memory_retrieve_all", {}),))], json.dumps(found)
        keys = memory.archival_memory_list_keys().get("keys", [])
        reads = tuple(ToolCall("archival_memory_retrieve", {"key": key}) for key in keys)
        values: list[Any] = [memory.archival_memory_retrieve(key=key) for key in keys]
        actions = [Action(tool_calls=(ToolCall("archival_memory_list_keys", {}),))]
        return actions + ([Action(tool_calls=reads)] if reads else []), json.dumps(values)

    def steps(self, task: MemoryTask) -> list[list[Action]]:
        actions, found = self._recall()
        answer = {"answer": found, "context": "retrieved from memory by a scripted oracle"}
        last = [*actions, Action(content=str(answer))]
        return [[Action(tool_calls=tuple(calls))] if calls else [] for calls in self.writes] + [last]
