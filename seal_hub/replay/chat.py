"""An episode as chat messages for `gradio.Chatbot`, cut into steps a viewer walks through.

`render_episode(trajectory, labels)` returns a `ReplayView`: the messages (plain dicts with ``role``,
``content`` and, for tool traffic, ``metadata``) and the frames of a step-through: frame 0 shows the system
prompt and the first user turn, frame k everything up to the k-th model step's tool results (and the user turn
that follows). Each tool call is its own message, closed, titled with the call (and the error kind when it failed,
so a failure reads without opening it); its result is nested under it through ``metadata["parent_id"]``. Each user
turn opens with a badge line: the turn number, the verdict (passed / failed / not verified) and the failure label.

The conversation is taken from the trajectory's recorded messages, so tool results read exactly as the agent
saw them (with the recovery hints of its environment version); the step records supply error kinds, parse
errors and the turn each step belongs to.

Not covered: what the agent was shown besides the conversation (`seal_hub.replay.shown`), Gradio itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from seal_hub.rollout.records import MessageRecord, StepRecord, Trajectory, TurnRecord

PASSED, FAILED, UNVERIFIED = "✅ passed", "❌ failed", "⏸ not verified"


@dataclass(frozen=True)
class ReplayView:
    """Chat messages and where each step-through frame ends (`frames[k]`: how many messages frame k shows)."""

    messages: tuple[dict[str, Any], ...]
    frames: tuple[int, ...]
    turn_frames: tuple[int, ...]  # the frame at which each user turn starts
    summary: str

    @property
    def last_frame(self) -> int:
        return len(self.frames) - 1

    def at(self, frame: int) -> list[dict[str, Any]]:
        """The messages visible at `frame` (clamped to the valid range)."""
        return list(self.messages[: self.frames[clamp(frame, self.last_frame)]])

    def frame_of_turn(self, turn: int) -> int:
        return self.turn_frames[clamp(turn, len(self.turn_frames) - 1)] if self.turn_frames else 0


def clamp(value: int, top: int) -> int:
    return max(0, min(int(value), top))


def badge(turn: int, verdict_passed: bool | None, label: str | None) -> str:
    """The badge line of a user turn, e.g. ``Turn 2 · ❌ failed · argument_mismatch``."""
    verdict = UNVERIFIED if verdict_passed is None else PASSED if verdict_passed else FAILED
    return f"**Turn {turn + 1}** · {verdict}" + (f" · `{label}`" if label else "")


def _groups(messages: list[MessageRecord]) -> tuple[MessageRecord | None, list[list[MessageRecord]], list[Any]]:
    """The system message, the user-message groups, and the assistant messages each with its tool messages."""
    system = messages[0] if messages and messages[0].role == "system" else None
    users: list[list[MessageRecord]] = []
    steps: list[tuple[MessageRecord, list[MessageRecord]]] = []
    previous = None
    for message in messages[1:] if system else messages:
        if message.role == "user":
            if previous != "user":
                users.append([])
            users[-1].append(message)
        elif message.role == "assistant":
            steps.append((message, []))
        elif message.role == "tool" and steps:
            steps[-1][1].append(message)
        previous = message.role
    return system, users, steps


def call_text(name: str, arguments: str) -> str:
    """A call as one line, ``name(key="value", n=2)``; arguments that are not a JSON object stay as given."""
    try:
        value = json.loads(arguments)
        body = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in value.items())
    except (TypeError, ValueError, AttributeError):
        body = arguments
    return f"{name}({body})"


def fenced(text: str) -> str:
    """`text` as a code block, so tool output is shown as written, never read as markdown."""
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}\n{text}\n{fence}"


def short(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _arguments(text: str) -> str:
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return text


def _step_messages(number: int, step: StepRecord, said: MessageRecord | None, shown: list[MessageRecord]) -> list:
    out: list[dict[str, Any]] = []
    content = (said.content if said is not None else step.text).strip()
    if content or not (step.tool_calls or step.parse_errors):
        out.append({"role": "assistant", "content": content or "*(empty reply)*"})
    results = list(step.results)
    for c, call in enumerate(step.tool_calls):
        call_id = f"step{number}-call{c}"
        record = results[c] if c < len(results) else None
        failed = f" → ⚠️ {record.error_kind}" if record is not None and record.error_kind else ""
        out.append(
            {
                "role": "assistant",
                "content": fenced(_arguments(call.arguments)),
                "metadata": {  # closed: the title is the call; a click shows its arguments and what it returned
                    "title": f"🛠️ {short(call_text(call.name, call.arguments))}{failed}",
                    "id": call_id,
                    "status": "done",
                },
            }
        )
        text = shown[c].content if c < len(shown) else (record.content if record else "")
        title = f"⚠️ {record.error_kind}" if record is not None and record.error_kind else f"↳ {call.name} returned"
        out.append(
            {
                "role": "assistant",
                "content": fenced(text) if text else "*(no output)*",
                "metadata": {"title": title, "parent_id": call_id},
            }
        )
    for e, error in enumerate(step.parse_errors):
        c = len(step.tool_calls) + e
        text = shown[c].content if c < len(shown) else error.message
        text = text or error.message
        out.append(
            {
                "role": "assistant",
                "content": f"{fenced(text)}\n\nModel text:\n{fenced(step.text)}",
                "metadata": {"title": f"⚠️ unparseable tool call ({error.kind})"},
            }
        )
    if not step.finished:
        out.append({"role": "assistant", "content": "*(cut at the token limit)*"})
    return out


def render_episode(trajectory: Trajectory, labels: tuple[str | None, ...] = ()) -> ReplayView:
    """The episode as chat messages with step-through frames; `labels` are the per-turn failure labels."""
    system, users, said = _groups(list(trajectory.messages))
    turns: list[TurnRecord] = list(trajectory.turns)
    messages: list[dict[str, Any]] = []
    if system is not None:
        messages.append(
            {
                "role": "assistant",
                "content": system.content,
                "metadata": {"title": "📋 system prompt", "status": "done"},
            }
        )

    def open_turn(t: int) -> None:
        verdict = turns[t].verdict if t < len(turns) else None
        label = labels[t] if t < len(labels) else None
        text = "\n\n".join(m.content for m in users[t]) if t < len(users) else ""
        messages.append({"role": "user", "content": f"{badge(t, verdict and verdict.passed, label)}\n\n{text}"})

    frames: list[int] = []
    turn_frames: list[int] = []
    number = 0
    for t in range(max(len(turns), len(users))):
        open_turn(t)
        if not frames:
            frames.append(len(messages))
        else:
            frames[-1] = len(messages)  # a new user turn shows with the step that ended the last one
        turn_frames.append(len(frames) - 1)
        for step in turns[t].steps if t < len(turns) else ():
            answer, shown = said[number] if number < len(said) else (None, [])
            number += 1
            messages += _step_messages(number, step, answer, shown)
            frames.append(len(messages))
    if not frames:
        frames.append(len(messages))
    reached = len(turns)
    unreached = list(labels[reached:])
    if trajectory.truncation or unreached:
        why = {"step_limit": "the step limit", "context_limit": "the context limit"}.get(trajectory.truncation or "")
        note = f"Episode ended by {why}." if why else "Episode ended."
        if unreached:
            note += f" Turns {reached + 1}-{len(labels)} were never reached: " + ", ".join(
                f"`{label}`" for label in unreached
            )
        messages.append({"role": "assistant", "content": note, "metadata": {"title": "⏹ end"}})
        frames[-1] = len(messages)
    return ReplayView(tuple(messages), tuple(frames), tuple(turn_frames), summarize(trajectory, labels))


def summarize(trajectory: Trajectory, labels: tuple[str | None, ...] = ()) -> str:
    """One line: task, rollout, outcome, steps, environment version, policy, failure labels."""
    outcome = PASSED if trajectory.passed else FAILED
    failures = sorted({label for label in labels if label and label != "pass"})
    policy = trajectory.policy_id.rsplit("/", 1)[-1] + (
        f"@{trajectory.policy_revision}" if trajectory.policy_revision else ""
    )
    parts = [
        f"**{trajectory.task_id}** (rollout {trajectory.rollout_index}, {trajectory.category})",
        outcome,
        f"{trajectory.num_steps} steps",
        f"interface {trajectory.interface_version}",
        f"policy {policy}",
    ]
    if failures:
        parts.append("labels: " + ", ".join(f"`{label}`" for label in failures))
    return " · ".join(parts)
