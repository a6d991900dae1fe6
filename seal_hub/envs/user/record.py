"""What a published environment version keeps of the user environment it was made on: `UserEnvironmentRecord`.

`UserSuite.record()` writes it and `UserSuite.from_record` builds the same suite back from it; an
`InterfaceSnapshot` (`seal_hub.interface.snapshot`) carries it in `user_environment` and hashes it with the rest
of its content. It lives with the suite it describes, so the interface imports it from here and envs never
imports the interface. A frozen pydantic record (unknown fields refused, no inf or nan), as the snapshot's own.

Not covered: which of its fields a snapshot's hash leaves out while unset (`seal_hub.interface.snapshot`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class UserEnvironmentRecord(BaseModel):
    """What a user environment's version was made on (`seal_hub.envs.user`): its class's import path and source
    hash, its tools' schemas, its dataset at a revision and how its episodes ran; `UserSuite.from_record` builds the
    same suite back, warning in one line when the class's source hash changed."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    class_path: str = Field(min_length=3)  # 'package.module:ATTR' (a class, a factory function or a dict of them)
    source_sha256: str = ""  # sha256 of inspect.getsource of the class's module ('' when it has no source)
    tools: tuple[dict[str, Any], ...] = ()
    dataset: str | None = Field(default=None, min_length=1)  # a datasets repo id or the path given; None: see below
    dataset_revision: str | None = None
    eval_fraction: float = Field(default=0.2, gt=0.0, lt=1.0)
    call_timeout_s: float = Field(default=30.0, gt=0.0)
    max_result_chars: int = Field(default=8000, ge=100)
    # added with TRL's whole contract (left out of the snapshot's hash while unset: the snapshot's `_LATER_FIELDS`)
    reward_funcs: tuple[str, ...] = ()  # 'package.module:function' of each reward function
    success_threshold: float | None = None  # the reward at or above which an episode passed (unset: 1.0)
    episodes: int | None = None  # a dataset-free environment: its held-out episodes (seeds from episode_seed)
    episode_seed: int = 0
    importable: bool = True  # False: a setup given in Python that cannot be imported by name
