"""What changed from one interface snapshot to another, one readable line per change.

`diff(a, b)` is what an environment version's card shows as its changelog, what `seal-hub interface diff` prints
and what the replay Space shows between two iterations: "+" a text appeared, "-" it went, "~" a setting or a
text changed (cues, hints, guidelines, their order, rho, train-only, origin, cause).

Not covered: the snapshot itself (`seal_hub.interface.snapshot`).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from seal_hub.diagnosis import Label
from seal_hub.interface.snapshot import Cause, InterfaceSnapshot


def _on(flag: bool) -> str:
    return "on" if flag else "off"


def _settings_diff(name: str, a: BaseModel, b: BaseModel, fields: Sequence[str]) -> list[str]:
    return [
        f"~ {name}.{field}: {_on(getattr(a, field))} -> {_on(getattr(b, field))}"
        for field in fields
        if getattr(a, field) != getattr(b, field)
    ]


def _texts_diff(kind: str, a: dict[str, str], b: dict[str, str]) -> list[str]:
    lines = []
    for key in [*a, *(k for k in b if k not in a)]:
        if key not in b:
            lines.append(f"- {kind} [{key}]")
        elif key not in a:
            lines.append(f"+ {kind} [{key}]: {b[key]}")
        elif a[key] != b[key]:
            lines.append(f"~ {kind} [{key}]: {b[key]}")
    return lines


def _cause_summary(cause: Cause | None) -> str:
    if cause is None:
        return "none"
    return f"{cause.profile.rollouts} rollouts, {cause.profile.turns} turns, {len(cause.rules)} rules"


def diff(a: InterfaceSnapshot, b: InterfaceSnapshot) -> list[str]:
    """What changed from `a` to `b`, one readable line per change ("+" appeared, "-" went, "~" changed)."""
    lines = [f"~ suite: {a.suite} -> {b.suite}"] if a.suite != b.suite else []
    cues_a, cues_b = a.schema_cues, b.schema_cues
    lines += _settings_diff("schema_cues", cues_a, cues_b, ("enabled", "mark_required", "enum_values", "type_hints"))
    lines += _texts_diff(
        "note", {"schema": cues_a.note} if cues_a.note else {}, {"schema": cues_b.note} if cues_b.note else {}
    )
    lines += _settings_diff("recovery_feedback", a.recovery_feedback, b.recovery_feedback, ("enabled",))
    lines += _texts_diff("hint", a.recovery_feedback.hints, b.recovery_feedback.hints)
    guides_a, guides_b = a.capability_guidelines, b.capability_guidelines
    lines += _settings_diff("capability_guidelines", guides_a, guides_b, ("enabled",))
    lines += _texts_diff(
        "guideline", {g.label: g.text for g in guides_a.lines}, {g.label: g.text for g in guides_b.lines}
    )
    order_a = [g.label for g in guides_a.lines if g.label in {h.label for h in guides_b.lines}]
    order_b = [g.label for g in guides_b.lines if g.label in set(order_a)]
    if order_a != order_b:
        lines.append(f"~ guideline order: {', '.join(order_a)} -> {', '.join(order_b)}")
    lines += [f"~ rho[{z}]: {a.rho[z]:.3f} -> {b.rho[z]:.3f}" for z in Label if a.rho[z] != b.rho[z]]
    if a.train_only != b.train_only:
        lines.append(f"~ train_only: {a.train_only} -> {b.train_only}")
    if a.origin != b.origin:
        was, now = (origin.describe() if origin else "none" for origin in (a.origin, b.origin))
        lines.append(f"~ origin: {was} -> {now}")
    if a.cause != b.cause:
        lines.append(f"~ cause: {_cause_summary(a.cause)} -> {_cause_summary(b.cause)}")
    return lines
