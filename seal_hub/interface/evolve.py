"""Interface evolution: the next learning-interface version from a failure profile, and the rules' settings.

`evolve(parent, profile, config)` makes the next learning-interface snapshot from the recent failure profile
(docs/method.md): schema cues on, a recovery hint per error kind, and a capability guideline for each
failure label with prevalence >= 0.10, count >= 8 and mean reward < 0.6 (at most 3, ranked by
prevalence * (1 - mean reward)). It returns `parent` itself when nothing would change, and is deterministic:
the same parent and profile give the same content hash (timestamps are outside the hash). The texts the
agent will read (system note, hints, guidelines) are written here, once per error kind or label, to tell the
agent what to do next rather than what went wrong.

Two interface modes (`INTERFACE_MODES`): `released` is the paper's released run, schema cues on from step 0
(`starting_interface`) and nothing else evolved; `full` is the method as the paper's text describes it, all
three components turned on and chosen from the diagnosis as training goes (`evolve_config_for`), recovery
feedback only in suites whose tools run and can fail (not BFCL single-turn, whose answers are only checked).

A user environment (`seal_hub.envs.user`) feeds the same rules: its schemas come from the methods' signatures, so
schema cues also show their defaults (`default_values`), and its recovery hints are also keyed by the exception
classes its tools raised (`exception_hint`: a known class's text, else the class's own docstring), given to
`evolve` as `raised` (class name -> docstring, from the suite) and kept once given.

`EvolveConfig` is the frozen record of these rules' switches and thresholds; a run builds it from `SealConfig`'s
flat fields (`SealConfig.evolve_config`), which keep their recipe names.

Not covered: the rho update (`seal_hub.interface.rho`), applying the weights to advantages
(`seal_hub.training.trainer`, with `RolloutDiagnosis.weight`) and publishing snapshots (`seal_hub.hub`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from seal_hub.diagnosis import FAILURE_LABELS, FailureProfile, Label
from seal_hub.envs.protocol import ErrorKind
from seal_hub.envs.user.record import UserEnvironmentRecord
from seal_hub.interface.snapshot import (
    MAX_GUIDELINES,
    CapabilityGuidelines,
    Cause,
    Guideline,
    InterfaceSnapshot,
    RecoveryFeedback,
    SchemaCues,
)

SCHEMA_NOTE = (
    "Every argument marked [required] must be given, with its exact name and a value of the declared type. "
    "Only the tools in the current schema exist: never call or invent any other tool."
)

RECOVERY_HINTS: dict[ErrorKind, str] = {
    ErrorKind.PARSE_ERROR: (
        "the call could not be read. Write it again in the tool-call format you were given: the tool's exact "
        "name and a valid JSON object of arguments."
    ),
    ErrorKind.UNKNOWN_TOOL: (
        "only the tools in the current schema exist. Use one of them with its exact name, or tell the user that "
        "no available tool can do this."
    ),
    ErrorKind.WITHHELD_TOOL: (
        "this tool is not available now. Use the tools in the current schema, or tell the user what you cannot "
        "do with them."
    ),
    ErrorKind.EXCLUDED_TOOL: (
        "this tool is not available in this task. Use the tools in the current schema, or tell the user what you "
        "cannot do with them."
    ),
    ErrorKind.ARGUMENTS_NOT_OBJECT: (
        'give the arguments as one JSON object of argument names to values, e.g. {"name": "value"}, and call again.'
    ),
    ErrorKind.MISSING_ARGUMENT: (
        "call again with every required argument. If the user has not given a value you need, ask the user "
        "for it instead of guessing."
    ),
    ErrorKind.UNEXPECTED_ARGUMENT: (
        "use only the argument names listed in the tool's schema, spelled exactly; drop the others and call again."
    ),
    ErrorKind.WRONG_TYPE: (
        "give each argument the type its schema declares (numbers without quotes, true/false for booleans, "
        "a list for arrays) and call again."
    ),
    ErrorKind.ARGUMENT_TOO_LARGE: "the arguments are too long. Send shorter values, or split the work into calls.",
    ErrorKind.TOOL_EXCEPTION: (
        "the tool failed with these arguments. Check each value against the tool's description and the current "
        "state, then call again with corrected values."
    ),
    ErrorKind.TOOL_ERROR: (
        "the tool reported an error. Fix its cause (a wrong value or a missing earlier step), then call again."
    ),
    ErrorKind.BAD_PATH: (
        "that file or folder does not exist where you are. List the current directory or move to the right "
        "folder first, then call again with a name that exists there."
    ),
    ErrorKind.NOT_AUTHENTICATED: (
        "this action needs a login first. Call the service's login or authentication tool (ask the user for "
        "credentials you do not have), then retry."
    ),
}

EXCEPTION_HINTS: dict[str, str] = {
    "ValueError": "the tool refused a value. Check each value against the tool's description (allowed values, "
    "formats, ranges) and call again with a valid one.",
    "TypeError": "a value has the wrong type. Give each argument the type its schema declares and call again.",
    "KeyError": "a name or id you gave does not exist. Look it up with a tool that lists what exists, then call "
    "again with one of those.",
    "LookupError": "what you asked for was not found. Look it up with a tool that lists what exists, then call "
    "again with one of those.",
    "IndexError": "a position is out of range. Check how many items there are, then call again with a valid index.",
    "FileNotFoundError": "that file or folder does not exist. List what exists first, then call again with a name "
    "that does.",
    "PermissionError": "this action is not allowed now. Do the step it depends on first, or tell the user what you "
    "cannot do.",
    "TimeoutError": "the tool did not answer in time. Try a smaller request, or tell the user it could not be done.",
    "ZeroDivisionError": "a value of zero made the tool fail. Check the numbers you passed and call again.",
    "NotImplementedError": "this tool cannot do that. Use another tool, or tell the user it cannot be done.",
}


def exception_hint(name: str, doc: str = "") -> str:
    """The hint for a tool that raised `name`: the known text for a standard class, else what the class's own
    docstring says it means (its first line), then what to do."""
    if name in EXCEPTION_HINTS:
        return EXCEPTION_HINTS[name]
    meaning = doc.strip().splitlines()[0].strip().rstrip(".") if doc and doc.strip() else ""
    said = f"the tool raised {name} ({meaning})." if meaning else f"the tool raised {name}."
    return f"{said} Fix its cause (a wrong value or a missing earlier step), then call again."


GUIDELINES: dict[Label, str] = {
    Label.SPURIOUS_TOOL_CALL: (
        "When no available tool can do what the user asks, or a value you need is missing, do not call a tool: "
        "say what you cannot do or ask the user for the missing value."
    ),
    Label.MISSING_TOOL_CALL: (
        "When the user asks for an action that a tool can do, call the tool; do not just describe it."
    ),
    Label.INVALID_TOOL_CALL: (
        "Call only tools from the current schema, with their exact names, every required argument, no extra "
        "arguments, and values of the declared types."
    ),
    Label.ARGUMENT_MISMATCH: (
        "Copy argument values exactly from the user's request and earlier tool results (names, numbers, units, "
        "spelling); never invent, round or reformat them."
    ),
    Label.RECOVERY_FAILURE: (
        "When a tool returns an error, fix the cause and call it again before you answer; do not leave a failed "
        "step behind."
    ),
    Label.INSTANCE_MISMATCH: (
        "Use the tools of the service the request is about; do not substitute a similar tool from another service."
    ),
    Label.STATE_MISMATCH: (
        "Make every change the user asked for, in order and nothing more; check the current state first when a "
        "step depends on it."
    ),
    Label.RESPONSE_MISMATCH: (
        "When the user asks for information, fetch it with the matching tool even if you think you know it, and "
        "report what the tool returned."
    ),
}


@dataclass(frozen=True)
class EvolveConfig:
    """The rules `evolve` follows: the component switches (from `interface_mode` and the suite in a run,
    `evolve_config_for`) and the thresholds. A run builds it from `SealConfig`'s flat fields of the same names
    (`SealConfig.evolve_config`); an invalid value is refused here, with the field's name."""

    schema_cues: bool = True  # evolve schema cues (turn them on)
    recovery_feedback: bool = True  # evolve recovery feedback (hints per error kind)
    capability_guidelines: bool = True  # evolve capability guidelines
    default_values: bool = False  # schema cues also show defaults (a suite whose schemas carry them)
    type_hints: bool = False  # schema cues also append each argument's type
    hint_kinds: tuple[str, ...] = tuple(str(kind) for kind in ErrorKind)  # error kinds that get a recovery hint
    guideline_min_prevalence: float = 0.10  # a guideline needs its label's prevalence >= this
    guideline_min_count: int = 8  # ... at least this many turns with its label
    guideline_max_mean_reward: float = 0.6  # ... and its label's mean reward < this
    max_guidelines: int = MAX_GUIDELINES  # guidelines kept, best score first

    def __post_init__(self) -> None:
        object.__setattr__(self, "hint_kinds", tuple(self.hint_kinds))  # a list from a config, kept as a tuple
        unknown = sorted(set(self.hint_kinds) - {str(kind) for kind in ErrorKind})
        if unknown:
            raise ValueError(f"hint_kinds: unknown error kind(s) {unknown}; use values of ErrorKind")
        if not 0.0 <= self.guideline_min_prevalence <= 1.0:
            raise ValueError(f"guideline_min_prevalence must be in [0, 1], got {self.guideline_min_prevalence}")
        if self.guideline_min_count < 0:
            raise ValueError(f"guideline_min_count must be >= 0, got {self.guideline_min_count}")
        if not 0.0 < self.guideline_max_mean_reward <= 1.0:
            raise ValueError(f"guideline_max_mean_reward must be in (0, 1], got {self.guideline_max_mean_reward}")
        if not 0 <= self.max_guidelines <= MAX_GUIDELINES:
            raise ValueError(f"max_guidelines must be in [0, {MAX_GUIDELINES}], got {self.max_guidelines}")


INTERFACE_MODES = ("released", "full")


def evolve_config_for(
    mode: str, *, tool_errors: bool = True, default_values: bool = False, **settings
) -> EvolveConfig:
    """The evolution rules of an interface mode: `released` evolves schema cues only; `full` all three, but
    recovery feedback only where the suite's tools can fail (`tool_errors`; single-turn answers never run).
    `default_values`: the suite's schemas carry defaults for the cues to show (a user environment's)."""
    if mode not in INTERFACE_MODES:
        raise ValueError(f"interface_mode must be one of {', '.join(INTERFACE_MODES)}, got {mode!r}")
    full = mode == "full"
    return EvolveConfig(
        recovery_feedback=full and tool_errors, capability_guidelines=full, default_values=default_values, **settings
    )


def starting_interface(
    suite: str,
    mode: str,
    env_adaptation: bool = True,
    *,
    default_values: bool = False,
    user_environment: UserEnvironmentRecord | None = None,
) -> InterfaceSnapshot:
    """Version v0 of a run: the null interface, or in the `released` mode (with environment adaptation on) the
    null interface with schema cues already on, as the paper's released runs train from the first step.
    `user_environment`: the record of the user environment the run is on, kept by every later version."""
    if mode != "released" or not env_adaptation:
        return InterfaceSnapshot(version="v0", suite=suite, user_environment=user_environment)
    rules = ["schema_cues: on from step 0 (interface_mode 'released', the paper's released runs)"]
    return InterfaceSnapshot(
        version="v0",
        suite=suite,
        schema_cues=SchemaCues(enabled=True, note=SCHEMA_NOTE, default_values=default_values),
        cause=Cause.of(FailureProfile(), rules),
        user_environment=user_environment,
    )


def guideline_score(profile: FailureProfile, label: Label) -> float:
    stats = profile.get(label)
    return stats.prevalence * (1.0 - stats.mean_reward)


def select_guidelines(profile: FailureProfile, config: EvolveConfig) -> list[Label]:
    """Failure labels past all three thresholds, best score first (ties: label order); not yet cut to the cap."""
    eligible = [
        label
        for label in Label
        if label in FAILURE_LABELS
        and (stats := profile.get(label)).count >= config.guideline_min_count
        and stats.prevalence >= config.guideline_min_prevalence
        and stats.mean_reward < config.guideline_max_mean_reward
    ]
    order = {label: index for index, label in enumerate(Label)}
    return sorted(eligible, key=lambda label: (-guideline_score(profile, label), order[label]))


def next_version(version: str) -> str:
    """'v3' -> 'v4'; other ids have no successor, so their children need an explicit version."""
    match = re.fullmatch(r"v(\d+)", version)
    if match is None:
        raise ValueError(f"version {version!r} is not 'v<number>'; pass version= to evolve explicitly")
    return f"v{int(match.group(1)) + 1}"


def _guidelines(profile: FailureProfile, config: EvolveConfig, rules: list[str]) -> CapabilityGuidelines:
    ranked = select_guidelines(profile, config)
    for rank, label in enumerate(ranked, start=1):
        stats = profile.get(label)
        kept = "kept" if rank <= config.max_guidelines else f"not kept (at most {config.max_guidelines})"
        rules.append(
            f"guideline[{label}]: prevalence {stats.prevalence:.3f} >= {config.guideline_min_prevalence:.2f}, "
            f"count {stats.count} >= {config.guideline_min_count}, mean reward {stats.mean_reward:.3f} < "
            f"{config.guideline_max_mean_reward:.2f}; score {guideline_score(profile, label):.3f}, rank {rank}, {kept}"
        )
    lines = tuple(Guideline(label=label, text=GUIDELINES[label]) for label in ranked[: config.max_guidelines])
    return CapabilityGuidelines(enabled=bool(lines), lines=lines)


def evolve(
    parent: InterfaceSnapshot,
    profile: FailureProfile,
    config: EvolveConfig | None = None,
    version: str | None = None,
    *,
    rho: Mapping[Label, float] | None = None,
    raised: Mapping[str, str] | None = None,
) -> InterfaceSnapshot:
    """The next interface snapshot for `profile`, or `parent` itself when nothing changes.

    Components whose switch is off stay as the parent has them. Guidelines are chosen afresh from the profile;
    a profile with no labelled turns carries no evidence and keeps the parent's. `rho`, when given, is the live
    closed-loop table to record in the snapshot (else the parent's is kept). `raised`: exception classes the
    suite's tools raised (name -> the class's docstring), each given a hint by `exception_hint` and kept after.
    """
    config = config or EvolveConfig()
    rules: list[str] = []
    cues = parent.schema_cues
    if config.schema_cues:
        cues = SchemaCues(
            enabled=True, type_hints=config.type_hints, note=SCHEMA_NOTE, default_values=config.default_values
        )
        shown = ", type hints" if config.type_hints else ""
        shown += ", defaults" if config.default_values else ""
        rules.append(f"schema_cues: on (required marks, enum values{shown})")
    feedback = parent.recovery_feedback
    if config.recovery_feedback:
        hints = {ErrorKind(kind): RECOVERY_HINTS[ErrorKind(kind)] for kind in config.hint_kinds}
        by_class = dict(parent.recovery_feedback.exception_hints)
        new = sorted(name for name in (raised or {}) if name not in by_class)
        by_class |= {name: exception_hint(name, (raised or {})[name]) for name in new}
        feedback = RecoveryFeedback(
            enabled=bool(hints or by_class), hints=hints, exception_hints=dict(sorted(by_class.items()))
        )
        rules.append(f"recovery_feedback: hints for {len(hints)} error kind(s)")
        if new:
            rules.append(f"recovery_feedback: hints for the exception class(es) its tools raised: {', '.join(new)}")
    guidelines = parent.capability_guidelines
    if config.capability_guidelines and profile.turns > 0:
        guidelines = _guidelines(profile, config, rules)
    new_rho = parent.rho if rho is None else {label: float(rho[label]) for label in Label}
    if new_rho != parent.rho:
        moved = sum(new_rho[label] != parent.rho[label] for label in Label)
        rules.append(f"rho: recorded the closed-loop table ({moved} weight(s) moved)")
    same = (cues, feedback, guidelines, new_rho) == (
        parent.schema_cues,
        parent.recovery_feedback,
        parent.capability_guidelines,
        parent.rho,
    )
    if same:
        return parent
    return InterfaceSnapshot(
        version=version if version is not None else next_version(parent.version),
        parent=parent.version,
        suite=parent.suite,
        schema_cues=cues,
        recovery_feedback=feedback,
        capability_guidelines=guidelines,
        rho=new_rho,
        cause=Cause.of(profile, rules),
        train_only=parent.train_only,
        user_environment=parent.user_environment,
    )
