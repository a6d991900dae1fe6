"""What the agent was shown at a point of an episode, under a chosen environment version.

`agent_view(snapshot, tools, trajectory, frame)` collects, through the snapshot's own rendering methods
(`seal_hub.interface.InterfaceSnapshot`): the system prompt (schema-cue note and capability guidelines), the
tools as rendered with the version's schema cues (each cue the version added to a description is listed
separately, so a reader sees exactly what changed), and the recovery hint attached to each tool error up to that
frame. `AgentView.markdown()` is what the Space prints.

The version need not be the one the episode ran under: a viewer can ask how the same point reads under another
version; `AgentView.ran_under` keeps the episode's own version so the page can say so.

`task_tools(suite, task_id)` gives the tools visible at a task's first turn (tools revealed at a later turn
arrive inside that turn's user message, which the chat already shows).

Not covered: the conversation itself (`seal_hub.replay.chat`), comparing versions (`seal_hub.replay.compare`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from seal_hub.envs.protocol import ErrorKind, ToolResult
from seal_hub.interface import InterfaceSnapshot
from seal_hub.rollout.records import Trajectory


@dataclass(frozen=True)
class ToolCue:
    tool: str
    argument: str
    added: str  # the text the version appended to the argument's description


@dataclass(frozen=True)
class ErrorShown:
    step: int
    tool: str
    error_kind: str
    shown: str  # the tool result as the agent reads it under this version (hint included)
    hint: str | None


@dataclass(frozen=True)
class AgentView:
    version: str
    parent: str | None
    ran_under: str
    system_prompt: str | None
    guidelines: tuple[str, ...]
    tools: tuple[dict[str, Any], ...]
    cues: tuple[ToolCue, ...]
    errors: tuple[ErrorShown, ...]
    feedback_on: bool
    is_null: bool = False

    def markdown(self) -> str:
        lineage = (
            f" (parent {self.parent})" if self.parent else " (null: the original protocol)" if self.is_null else ""
        )
        lines = [f"#### Interface {self.version}{lineage}"]
        if self.ran_under != self.version:
            lines.append(
                f"*The episode ran under {self.ran_under}; this is how the same point reads under {self.version}.*"
            )
        lines.append("**System prompt**")
        if self.system_prompt:
            lines.append("\n".join(f"> {line}" if line else ">" for line in self.system_prompt.splitlines()))
        else:
            lines.append("*none: the original protocol has no system prompt*")
        lines.append(f"**Guidelines** ({len(self.guidelines)})")
        lines += [f"- {text}" for text in self.guidelines] or ["*none*"]
        lines.append(f"**Tool errors so far** ({len(self.errors)})")
        for error in self.errors:
            hint = (
                f"hint: *{error.hint}*"
                if error.hint
                else "no hint (recovery feedback off)"
                if not self.feedback_on
                else "no hint for this kind"
            )
            lines.append(f"- step {error.step} · `{error.tool}` · `{error.error_kind}` · {hint}")
        if not self.errors:
            lines.append("*none*")
        names = ", ".join(f"`{t.get('function', t).get('name', '?')}`" for t in self.tools)
        lines.append(f"**Tools** ({len(self.tools)}): {names}")
        tools_cued = len({c.tool for c in self.cues})
        lines.append(f"**Schema cues** ({len(self.cues)} on {tools_cued} tools)" if self.cues else "**Schema cues**")
        by_tool: dict[str, list[str]] = {}
        for cue in self.cues:
            by_tool.setdefault(cue.tool, []).append(f"{cue.argument} {cue.added}")
        lines += [f"- `{tool}`: " + "; ".join(added) for tool, added in by_tool.items()] or [
            "*none (schema cues off)*"
        ]
        return "\n\n".join(lines[:2]) + "\n\n" + "\n\n".join(_join_lists(lines[2:]))

    def tools_json(self) -> str:
        return json.dumps(list(self.tools), indent=2, ensure_ascii=False)


def _join_lists(lines: list[str]) -> list[str]:
    """Consecutive "- " lines become one block, so markdown renders them as one list."""
    out: list[str] = []
    for line in lines:
        if line.startswith("- ") and out and out[-1].startswith("- "):
            out[-1] += "\n" + line
        else:
            out.append(line)
    return out


def _cues(original: Sequence[dict[str, Any]], rendered: Sequence[dict[str, Any]]) -> list[ToolCue]:
    found: list[ToolCue] = []
    for before, after in zip(original, rendered, strict=True):
        function_a, function_b = before.get("function", before), after.get("function", after)
        _walk(function_a.get("parameters"), function_b.get("parameters"), function_b.get("name", "?"), "", found)
    return found


def _walk(a: Any, b: Any, tool: str, prefix: str, found: list[ToolCue]) -> None:
    if not isinstance(a, dict) or not isinstance(b, dict):
        return
    for name, prop_b in (b.get("properties") or {}).items():
        prop_a = (a.get("properties") or {}).get(name, {})
        if not isinstance(prop_b, dict) or not isinstance(prop_a, dict):
            continue
        old, new = str(prop_a.get("description", "")), str(prop_b.get("description", ""))
        if new != old:
            added = new[len(old.rstrip()) :].strip() if new.startswith(old.rstrip()) else new
            found.append(ToolCue(tool, prefix + name, added))
        _walk(prop_a, prop_b, tool, f"{prefix}{name}.", found)
        _walk(prop_a.get("items"), prop_b.get("items"), tool, f"{prefix}{name}[].", found)


def _errors(snapshot: InterfaceSnapshot, trajectory: Trajectory, frame: int) -> list[ErrorShown]:
    steps = [step for turn in trajectory.turns for step in turn.steps][: max(0, frame)]
    out = []
    for number, step in enumerate(steps, start=1):
        names = [call.name for call in step.tool_calls]
        for c, result in enumerate(step.results):
            if result.error_kind is None:
                continue
            try:
                kind = ErrorKind(result.error_kind)
            except ValueError:
                kind = None
            record = ToolResult(None, result.content, kind, result.executed, result.note)
            hint = snapshot.recovery_feedback.hints.get(kind) if snapshot.recovery_feedback.enabled and kind else None
            tool = names[c] if c < len(names) else "(unparsed)"
            out.append(ErrorShown(number, tool, result.error_kind, snapshot.render_result(record), hint))
    return out


def agent_view(
    snapshot: InterfaceSnapshot, tools: Sequence[dict[str, Any]], trajectory: Trajectory, frame: int
) -> AgentView:
    """What the agent is shown at `frame` (the number of model steps taken) under `snapshot`."""
    rendered = snapshot.render_tools(tools)
    guides = snapshot.capability_guidelines
    return AgentView(
        version=snapshot.version,
        parent=snapshot.parent,
        ran_under=trajectory.interface_version,
        system_prompt=snapshot.system_prompt(),
        guidelines=tuple(g.text for g in guides.lines) if guides.enabled else (),
        tools=tuple(rendered),
        cues=tuple(_cues(tools, rendered)),
        errors=tuple(_errors(snapshot, trajectory, frame)),
        feedback_on=snapshot.recovery_feedback.enabled,
        is_null=snapshot.is_null,
    )


def task_tools(suite: Any, task_id: str) -> list[dict[str, Any]]:
    """The JSON-schema tools visible at the first turn of `task_id` (`KeyError` for an unknown task)."""
    episode = suite.episode(suite.task(task_id))
    try:
        return list(episode.reset().tools)
    finally:
        episode.close()
