"""Diagnosis: failed turns turned into labels, and what the labels add up to.

Between the rollouts and the learning interface in SEAL's loop: a suite labels each user turn of a finished
rollout with its own rules (`Suite.diagnose`; BFCL multi-turn's in `seal_hub.envs.bfcl.labels`, single-turn's
in `seal_hub.envs.bfcl_single.labels`); this package holds what every suite shares: the labels and their
weights (`labels`), a rollout's diagnosis and weight and a batch's failure profile (`profile`), the stored
rows (`records`, the one module that needs `datasets`), and `seal-hub diagnose` (`commands`).

The names below are the light ones (no bfcl-eval, no `datasets`); import `seal_hub.diagnosis.records` for the
features and rows.
"""

from seal_hub.diagnosis.labels import DEFAULT_RHO, FAILURE_LABELS, WEIGHT_MAX, WEIGHT_MIN, DiagnosisError, Label
from seal_hub.diagnosis.profile import FailureProfile, LabelStats, RolloutDiagnosis

__all__ = [
    "DEFAULT_RHO",
    "FAILURE_LABELS",
    "WEIGHT_MAX",
    "WEIGHT_MIN",
    "DiagnosisError",
    "FailureProfile",
    "Label",
    "LabelStats",
    "RolloutDiagnosis",
]
