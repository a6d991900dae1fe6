"""The same task in two episodes, side by side: turns aligned one to one, and how the two interfaces differ.

`align(a, labels_a, b, labels_b)` pairs user turn t of episode A with user turn t of episode B (both play the
same task, so turn t is the same user request); each `TurnPair` carries both verdicts, labels and the calls each
episode made in that turn, and whether the two agree. `alignment_markdown` prints the pairs as a table.

`interface_changes(a, b, tools)` gives `seal_hub.interface.diff`'s lines (cues, hints, guidelines, rho, cause)
and `shown_diff_html` an `difflib.HtmlDiff` side-by-side table of what the agent reads under each version: the
system prompt, the hints and the tool descriptions, one argument per line so a cue shows as a one-line change.

Not covered: picking the two episodes (the Space), rendering a single episode (`seal_hub.replay.chat`).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from seal_hub.interface import InterfaceSnapshot, diff
from seal_hub.replay.chat import call_text
from seal_hub.rollout.records import Trajectory, TurnRecord


@dataclass(frozen=True)
class TurnSide:
    verdict: bool | None  # None: the episode never verified this turn
    label: str | None
    calls: tuple[str, ...]  # "name(arguments)" for each call the turn made, in order
    steps: int


@dataclass(frozen=True)
class TurnPair:
    turn: int
    a: TurnSide
    b: TurnSide

    @property
    def same_verdict(self) -> bool:
        return self.a.verdict == self.b.verdict

    @property
    def same_calls(self) -> bool:
        return self.a.calls == self.b.calls


def _side(turn: TurnRecord | None, label: str | None) -> TurnSide:
    if turn is None:
        return TurnSide(None, label, (), 0)
    calls = tuple(call_text(c.name, c.arguments) for step in turn.steps for c in step.tool_calls)
    verdict = turn.verdict.passed if turn.verdict is not None else None
    return TurnSide(verdict, label, calls, len(turn.steps))


def align(
    a: Trajectory, labels_a: Sequence[str | None], b: Trajectory, labels_b: Sequence[str | None]
) -> list[TurnPair]:
    """Turn t of `a` beside turn t of `b`; a turn one episode never reached appears with no verdict."""
    if a.task_id != b.task_id:
        raise ValueError(f"cannot align {a.task_id} with {b.task_id}: side by side compares one task")
    count = max(len(a.turns), len(b.turns), len(labels_a), len(labels_b))

    def pick(trajectory: Trajectory, labels: Sequence[str | None], t: int) -> TurnSide:
        turn = trajectory.turns[t] if t < len(trajectory.turns) else None
        return _side(turn, labels[t] if t < len(labels) else None)

    return [TurnPair(t, pick(a, labels_a, t), pick(b, labels_b, t)) for t in range(count)]


def _cell(side: TurnSide) -> str:
    verdict = "⏸ not reached" if side.verdict is None else "✅" if side.verdict else "❌"
    label = f" `{side.label}`" if side.label else ""
    calls = "<br>".join(f"`{_escape(call)}`" for call in side.calls[:6]) or "*no call*"
    more = f"<br>+{len(side.calls) - 6} more" if len(side.calls) > 6 else ""
    return f"{verdict}{label}<br>{calls}{more}"


def _escape(text: str) -> str:
    text = text if len(text) <= 80 else text[:77] + "..."
    return text.replace("|", "\\|").replace("`", "'")


def alignment_markdown(pairs: Sequence[TurnPair], title_a: str, title_b: str) -> str:
    """A markdown table: one row per user turn, A and B side by side, and whether they agree."""
    lines = [f"| turn | {title_a} | {title_b} | agree |", "|---|---|---|---|"]
    for pair in pairs:
        agree = "same" if pair.same_verdict and pair.same_calls else "verdict" if pair.same_verdict else "**differ**"
        lines.append(f"| {pair.turn + 1} | {_cell(pair.a)} | {_cell(pair.b)} | {agree} |")
    return "\n".join(lines)


def interface_changes(a: InterfaceSnapshot, b: InterfaceSnapshot) -> list[str]:
    """`seal_hub.interface.diff` from `a` to `b`, or one line saying they are the same."""
    if a.content_hash == b.content_hash:
        return [f"{a.version} and {b.version} are the same interface ({a.content_hash[:12]})"]
    return diff(a, b) or [f"{a.version} -> {b.version}: no visible difference"]


def shown_lines(snapshot: InterfaceSnapshot, tools: Sequence[dict[str, Any]]) -> list[str]:
    """What the agent reads under `snapshot`, as lines: system prompt, hints, one line per tool argument."""
    lines = ["[system prompt]", *(snapshot.system_prompt() or "(none)").splitlines()]
    feedback = snapshot.recovery_feedback
    lines.append("[recovery hints]")
    lines += [f"{kind}: {hint}" for kind, hint in feedback.hints.items()] if feedback.enabled else ["(none)"]
    lines.append("[tools]")
    for tool in snapshot.render_tools(tools):
        function = tool.get("function", tool)
        lines.append(f"{function.get('name')}: {function.get('description', '')}".strip())
        properties = (function.get("parameters") or {}).get("properties") or {}
        lines += [f"  {name}: {prop.get('description', '')}" for name, prop in properties.items()]
    return lines


def shown_diff_html(a: InterfaceSnapshot, b: InterfaceSnapshot, tools: Sequence[dict[str, Any]]) -> str:
    """A side-by-side HTML table (`difflib.HtmlDiff`) of what the agent reads under `a` and under `b`."""
    html = difflib.HtmlDiff().make_table(
        shown_lines(a, tools), shown_lines(b, tools), f"interface {a.version}", f"interface {b.version}", context=True
    )
    return f'<div class="seal-diff">{html}</div>'
