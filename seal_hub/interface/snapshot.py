"""The learning interface: what the agent is shown, as an immutable, versioned, content-hashed snapshot.

An `InterfaceSnapshot` holds SEAL's three environment-side components (schema cues, recovery feedback,
capability guidelines), the rho table in force when it was made, why it was made (the failure profile
and the rules that fired) and, for a run's first snapshot taken from a published version, where it came
from (`Origin`: the source reference at its resolved commit). Everything the agent sees passes through its
rendering methods: `render_tools` (JSON-schema tools), `system_prompt` and `render_result` (tool results).
The null interface (`v0`) is BFCL's own protocol byte for byte: tools unchanged, no system prompt, results
unchanged.

Design choices: the snapshot is data, the texts it holds are written by `seal_hub.interface.evolve`, so this module
is mechanism only. `content_hash` is the sha256 of the canonical JSON of every field except `created_at` and
the hash itself, so the same content always hashes the same and a hand-edited file is caught on load.
Snapshots are training-only by default: `effective_interface` hands evaluation the null interface unless
asked otherwise. Files are written atomically (temp file, then `os.replace`); `load_snapshot` validates a file
and raises `InterfaceError` naming the file and the field (`seal_hub.interface.store` keeps a lineage of them).

Not covered: deciding what changes between versions (`seal_hub.interface.evolve`), what changed between two
(`seal_hub.interface.diff`), Hub publishing (`seal_hub.hub`), and how a rollout splices the system prompt into a
task's own messages (`seal_hub.rollout`).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from seal_hub.atomic import write_text
from seal_hub.defaults import DEFAULT_SUITE
from seal_hub.diagnosis import DEFAULT_RHO, FailureProfile, Label, LabelStats
from seal_hub.envs.protocol import ErrorKind, ToolResult
from seal_hub.envs.user.record import UserEnvironmentRecord

MAX_GUIDELINES = 3
_VERSION = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
_ENUM_IN_DESCRIPTION = re.compile(r"\[Enum\]:\s*(.*)$", re.DOTALL)
_RAISED = re.compile(r"^Error: ([A-Za-z_][\w.]*)(?::|$)")  # a user environment's tool exception (its class)


class InterfaceError(ValueError):
    """A snapshot file or store is unusable (bad JSON, unknown label, edited content, unknown parent)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class SchemaCues(_Frozen):
    enabled: bool = False
    mark_required: bool = True  # append " [required]" to required argument descriptions
    enum_values: bool = True  # append "Allowed values: a, b" to enum arguments
    type_hints: bool = False  # append "(type: integer)"
    note: str = ""  # system note: required arguments exactly, no tool outside the schema
    default_values: bool = False  # append "Default: 3" where the schema gives a default (user environments)


class RecoveryFeedback(_Frozen):
    enabled: bool = False
    hints: dict[ErrorKind, str] = {}
    exception_hints: dict[str, str] = {}  # a tool's exception class -> its hint, before the error kind's (user envs)

    @field_validator("hints")
    @classmethod
    def _ordered(cls, hints: dict[ErrorKind, str]) -> dict[ErrorKind, str]:
        return {kind: hints[kind] for kind in ErrorKind if kind in hints}


class Guideline(_Frozen):
    label: Label
    text: str = Field(min_length=1)


class CapabilityGuidelines(_Frozen):
    enabled: bool = False
    lines: tuple[Guideline, ...] = Field(default=(), max_length=MAX_GUIDELINES)

    @field_validator("lines")
    @classmethod
    def _one_per_label(cls, lines: tuple[Guideline, ...]) -> tuple[Guideline, ...]:
        labels = [line.label for line in lines]
        if len(set(labels)) != len(labels):
            raise ValueError(f"one guideline per label, got {[str(label) for label in labels]}")
        return lines


class CauseProfile(_Frozen):
    """`FailureProfile.to_dict()` as a typed record."""

    rollouts: int = Field(ge=0)
    turns: int = Field(ge=0)
    labels: dict[Label, LabelStats] = {}


class Cause(_Frozen):
    profile: CauseProfile
    rules: tuple[str, ...] = ()

    @classmethod
    def of(cls, profile: FailureProfile, rules: Sequence[str]) -> Cause:
        return cls(profile=CauseProfile.model_validate(profile.to_dict()), rules=tuple(rules))


class Origin(_Frozen):
    """Where a run's first snapshot came from: a published version, resolved once to an immutable commit.

    A run started from ``ns/other-env@v3`` re-roots that snapshot in its own lineage (no parent there) and keeps
    its version number, so its own evolutions continue at ``v4``; `origin` names the source it was derived from.
    """

    ref: str = Field(min_length=1)  # the reference as given, e.g. "ns/other-env@v3"
    repo_id: str = Field(min_length=1)
    revision: str = Field(min_length=1)
    commit: str = Field(pattern=r"^[0-9a-f]{7,64}$")
    version: str = Field(pattern=_VERSION)  # the source snapshot's own version and parent
    parent: str | None = Field(default=None, pattern=_VERSION)
    content_hash: str = Field(pattern=r"^[0-9a-f]{64}$")

    def describe(self) -> str:
        return f"{self.ref} (commit {self.commit})"


# fields added after the first published versions: left out of the content hash while unset, so those versions
# keep their hashes (a snapshot file without them loads as it always did)
_LATER_FIELDS: tuple[tuple[tuple[str, ...], Any], ...] = (
    (("schema_cues", "default_values"), False),
    (("recovery_feedback", "exception_hints"), {}),
    (("user_environment", "reward_funcs"), []),
    (("user_environment", "success_threshold"), None),
    (("user_environment", "episodes"), None),
    (("user_environment", "episode_seed"), 0),
    (("user_environment", "importable"), True),
    (("user_environment",), None),
)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class InterfaceSnapshot(_Frozen):
    """One version of the learning interface. Build new versions with `seal_hub.interface.evolve.evolve`."""

    version: str = Field(pattern=_VERSION)
    parent: str | None = Field(default=None, pattern=_VERSION)
    created_at: str = Field(default_factory=_now)
    suite: str = DEFAULT_SUITE
    schema_cues: SchemaCues = SchemaCues()
    recovery_feedback: RecoveryFeedback = RecoveryFeedback()
    capability_guidelines: CapabilityGuidelines = CapabilityGuidelines()
    rho: dict[Label, float] = Field(default_factory=lambda: dict(DEFAULT_RHO))
    cause: Cause | None = None
    train_only: bool = True
    origin: Origin | None = None
    user_environment: UserEnvironmentRecord | None = None  # the user environment it was made on (else: `suite`)
    content_hash: str = ""

    @field_validator("created_at")
    @classmethod
    def _iso(cls, value: str) -> str:
        datetime.fromisoformat(value)  # ValueError names the field
        return value

    @field_validator("rho")
    @classmethod
    def _complete(cls, rho: dict[Label, float]) -> dict[Label, float]:
        missing = [str(label) for label in Label if label not in rho]
        if missing:
            raise ValueError(f"no weight for label(s) {', '.join(missing)}; give every label a weight")
        bad = [f"{label}={value}" for label, value in rho.items() if value <= 0]
        if bad:
            raise ValueError(f"weights must be positive, got {', '.join(bad)}")
        return {label: float(rho[label]) for label in Label}

    @model_validator(mode="after")
    def _check(self) -> InterfaceSnapshot:
        if self.parent == self.version:
            raise ValueError(f"parent: a snapshot cannot be its own parent ({self.version!r})")
        digest = self.compute_hash()
        if not self.content_hash:
            object.__setattr__(self, "content_hash", digest)
        elif self.content_hash != digest:
            raise ValueError(
                f"content_hash: stored {self.content_hash[:12]}... does not match the content ({digest[:12]}...); "
                "the snapshot was edited after it was made: evolve a new version instead"
            )
        return self

    @classmethod
    def null(cls, suite: str = DEFAULT_SUITE) -> InterfaceSnapshot:
        """BFCL's original protocol: tools, results and prompts exactly as the suite gives them."""
        return cls(version="v0", suite=suite)

    @property
    def is_null(self) -> bool:
        return not (self.schema_cues.enabled or self.recovery_feedback.enabled or self.capability_guidelines.enabled)

    def stored_dict(self) -> dict[str, Any]:
        """The snapshot as its file holds it: every field, but those added later only when set (`_LATER_FIELDS`)."""
        content = self.model_dump(mode="json")
        for path, unset in _LATER_FIELDS:
            *parents, name = path
            node = content
            for part in parents:
                node = node.get(part) if isinstance(node, dict) else None
            if isinstance(node, dict) and name in node and node[name] == unset:
                del node[name]
        return content

    def compute_hash(self) -> str:
        content = self.stored_dict()
        del content["created_at"], content["content_hash"]
        canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    # Rendering: everything the agent sees goes through these three methods.

    def render_tools(self, tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The tools as shown to the model: deep copies, with schema cues added when they are on."""
        rendered = copy.deepcopy(list(tools))
        if self.schema_cues.enabled:
            for tool in rendered:
                function = tool.get("function", tool)
                if isinstance(function.get("parameters"), dict):
                    _cue_object(function["parameters"], self.schema_cues)
        return rendered

    def system_prompt(self) -> str | None:
        """The schema-cue system note and the guideline lines; None when there is nothing to say."""
        parts = []
        if self.schema_cues.enabled and self.schema_cues.note:
            parts.append(self.schema_cues.note)
        if self.capability_guidelines.enabled and self.capability_guidelines.lines:
            parts.append("\n".join(["Guidelines:", *(f"- {g.text}" for g in self.capability_guidelines.lines)]))
        return "\n\n".join(parts) or None

    def render_result(self, result: ToolResult) -> str:
        """A tool result's content, plus the ill-typed-call note and the recovery hint when feedback is on."""
        if not self.recovery_feedback.enabled:
            return result.content
        lines = [result.content]
        if result.executed and result.note:
            lines.append(f"Note: {result.note}")
        hint = self.recovery_feedback.hints.get(result.error_kind) if result.error_kind is not None else None
        raised = _RAISED.match(result.content) if result.error_kind == ErrorKind.TOOL_EXCEPTION else None
        if raised and raised.group(1) in self.recovery_feedback.exception_hints:
            hint = self.recovery_feedback.exception_hints[raised.group(1)]
        if hint:
            lines.append(f"Hint: {hint}")
        return "\n".join(lines)

    def save(self, path: str | Path) -> Path:
        """Write the snapshot as JSON, atomically: a temp file in the same folder, then `os.replace`."""
        if self.compute_hash() != self.content_hash:
            raise InterfaceError(f"snapshot {self.version}: content changed after it was made; not saving it")
        return write_text(path, json.dumps(self.stored_dict(), indent=2, ensure_ascii=False) + "\n")


def _enum_values(prop: dict[str, Any]) -> list[Any]:
    """Enum values from JSON-schema `enum` keys (on the property or its items) or BFCL's "[Enum]: ..." text."""
    for node in (prop, prop.get("items")):
        if isinstance(node, dict) and isinstance(node.get("enum"), list):
            return node["enum"]
    match = _ENUM_IN_DESCRIPTION.search(str(prop.get("description", "")))
    if match is None:
        return []
    rest = match.group(1).strip()
    if rest.startswith("["):
        try:
            values, _ = json.JSONDecoder().raw_decode(rest)
            return values if isinstance(values, list) else []
        except ValueError:
            rest = rest.strip("[]")
    return [value.strip() for value in rest.rstrip(".").split(",") if value.strip()]


def _type_name(prop: dict[str, Any]) -> str | None:
    kind = prop.get("type")
    if not isinstance(kind, str):
        return None
    items = prop.get("items")
    if kind == "array" and isinstance(items, dict) and isinstance(items.get("type"), str):
        return f"array of {items['type']}"
    return kind


def _cue_object(node: dict[str, Any], cues: SchemaCues) -> None:
    """Add cues to every property description of an object schema, recursing into nested objects (in place).

    A property whose description says "[Optional]" (BFCL's marker) is never marked required.
    """
    properties = node.get("properties")
    if not isinstance(properties, dict):
        return
    required = set(node.get("required", ()))
    for name, prop in properties.items():
        if not isinstance(prop, dict):
            continue
        description = str(prop.get("description", ""))
        additions = []
        if cues.mark_required and name in required and "[Optional]" not in description:
            additions.append("[required]")
        values = _enum_values(prop) if cues.enum_values else []
        if values:
            additions.append("Allowed values: " + ", ".join(map(str, values)))
        if cues.type_hints and (kind := _type_name(prop)):
            additions.append(f"(type: {kind})")
        if cues.default_values and "default" in prop and name not in required:
            additions.append(f"Default: {json.dumps(prop['default'], ensure_ascii=False)}")
        additions = [a for a in additions if a not in description]
        if additions:
            prop["description"] = " ".join([description.rstrip(), *additions]).strip()
        _cue_object(prop, cues)
        if isinstance(prop.get("items"), dict):
            _cue_object(prop["items"], cues)


def effective_interface(
    snapshot: InterfaceSnapshot, training: bool, *, keep_at_eval: bool = False
) -> InterfaceSnapshot:
    """The interface an episode uses: the snapshot in training; at evaluation the null interface, unless the
    snapshot is not train-only or the caller asks (`keep_at_eval`)."""
    if training or keep_at_eval or not snapshot.train_only:
        return snapshot
    return InterfaceSnapshot.null(snapshot.suite)


def _field_error(error: dict[str, Any]) -> str:
    where = ".".join(str(part) for part in error["loc"] if part != "[key]")
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "enum":
        message = f"unknown value {error['input']!r}; expected one of {error['ctx']['expected']}"
    return f"field {where!r}: {message}" if where else message


def load_snapshot(path: str | Path, known_versions: Collection[str] | None = None) -> InterfaceSnapshot:
    """Read and validate a snapshot file; with `known_versions`, its parent must be one of them."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InterfaceError(f"interface snapshot {path}: not valid JSON (line {exc.lineno}): {exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InterfaceError(f"interface snapshot {path}: cannot read it: {exc}") from None
    if not isinstance(data, dict):
        raise InterfaceError(f"interface snapshot {path}: expected a JSON object, got {type(data).__name__}")
    try:
        snapshot = InterfaceSnapshot.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(_field_error(error) for error in exc.errors())
        raise InterfaceError(f"interface snapshot {path}: {problems}") from None
    if known_versions is not None and snapshot.parent is not None and snapshot.parent not in known_versions:
        known = ", ".join(sorted(known_versions)) or "none"
        raise InterfaceError(
            f"interface snapshot {path}: field 'parent': version {snapshot.parent!r} is not known (known: {known})"
        )
    return snapshot
