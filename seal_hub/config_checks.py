"""The one check that config records share: named counts that must be at least 1.

Episode settings, the rollout engine's config, the evaluation protocol and the trainer's config each hold counts
(steps, tokens, episodes) that are meaningless below 1; they all refuse them here, with one wording that names
the field, so a user sees the same message whichever entry point they came through.

Not covered: cross-field checks (each record's own `__post_init__`).
"""

from __future__ import annotations

from typing import Any


def require_at_least_one(record: Any, *names: str, optional: bool = False) -> None:
    """Raise `ValueError` naming the first field of `record` among `names` that is below 1.

    `optional=True`: None is allowed too (no limit), and the message says so.
    """
    for name in names:
        value = getattr(record, name)
        if optional and value is None:
            continue
        if value < 1:
            unset = " or None (no cap)" if optional else ""
            raise ValueError(f"{name} must be >= 1{unset}, got {value}")
