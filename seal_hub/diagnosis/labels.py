"""The failure labels a turn can carry, and their default advantage weights (rho): the vocabulary of diagnosis.

Every suite that labels turns labels them with these ten values, so the rollout weights, the failure profile,
interface evolution and the rho update work the same on any suite. This module imports nothing but the standard
library: a snapshot, a report or a suite's own labelling rules can name a label without loading bfcl-eval,
`datasets` or a model (`import seal_hub.interface` stays light because of it).

Not covered: the rules that give a turn its label (each suite's own, e.g. `seal_hub.envs.bfcl.labels`), and what
a batch of labels adds up to (`seal_hub.diagnosis.profile`).
"""

from __future__ import annotations

from enum import StrEnum


class Label(StrEnum):
    SPURIOUS_TOOL_CALL = "spurious_tool_call"
    CORRECT_ABSTENTION = "correct_abstention"
    MISSING_TOOL_CALL = "missing_tool_call"
    INVALID_TOOL_CALL = "invalid_tool_call"
    ARGUMENT_MISMATCH = "argument_mismatch"
    RECOVERY_FAILURE = "recovery_failure"
    INSTANCE_MISMATCH = "instance_mismatch"
    STATE_MISMATCH = "state_mismatch"
    RESPONSE_MISMATCH = "response_mismatch"
    PASS = "pass"


# docs/method.md: the paper's released weights, and 1.0 where the paper's text is the only source.
DEFAULT_RHO: dict[Label, float] = {
    Label.SPURIOUS_TOOL_CALL: 2.0,
    Label.CORRECT_ABSTENTION: 1.8,
    Label.MISSING_TOOL_CALL: 1.5,
    Label.INVALID_TOOL_CALL: 1.0,
    Label.ARGUMENT_MISMATCH: 1.0,
    Label.RECOVERY_FAILURE: 1.0,
    Label.INSTANCE_MISMATCH: 0.6,
    Label.STATE_MISMATCH: 1.0,
    Label.RESPONSE_MISMATCH: 0.9,
    Label.PASS: 1.0,
}
FAILURE_LABELS = frozenset(set(Label) - {Label.PASS, Label.CORRECT_ABSTENTION})
WEIGHT_MIN, WEIGHT_MAX = 0.5, 2.0


class DiagnosisError(ValueError):
    """Turn labels asked for a suite that has none; the message names the suites that have them."""
