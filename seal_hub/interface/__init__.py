"""The learning interface: what the agent is shown, versioned; how it evolves, and how rho moves with it.

Between diagnosis and training in SEAL's loop. `snapshot` is the versioned, content-hashed `InterfaceSnapshot` and
its rendering; `diff` what changed between two; `store` a local directory of snapshots with enforced lineage;
`evolve` the rules that make the next version from a failure profile; `rho` the closed-loop update of the
advantage weights; `commands` `seal-hub interface show|diff`.

Importing this package loads neither bfcl-eval nor `datasets` (the labels it names come from
`seal_hub.diagnosis.labels`), so reading a published snapshot costs no suite.
"""

from seal_hub.interface.diff import diff
from seal_hub.interface.snapshot import (
    MAX_GUIDELINES,
    CapabilityGuidelines,
    Cause,
    CauseProfile,
    Guideline,
    InterfaceError,
    InterfaceSnapshot,
    Origin,
    RecoveryFeedback,
    SchemaCues,
    UserEnvironmentRecord,
    effective_interface,
    load_snapshot,
)
from seal_hub.interface.store import SnapshotStore

__all__ = [
    "MAX_GUIDELINES",
    "CapabilityGuidelines",
    "Cause",
    "CauseProfile",
    "Guideline",
    "InterfaceError",
    "InterfaceSnapshot",
    "Origin",
    "RecoveryFeedback",
    "SchemaCues",
    "SnapshotStore",
    "UserEnvironmentRecord",
    "diff",
    "effective_interface",
    "load_snapshot",
]
