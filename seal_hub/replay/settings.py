"""How one replay Space process is set up: the run it opens, local or deployed mode, and its bounds.

`SpaceSettings.read(folder)` reads ``replay.json`` in the app's folder (written by `seal-hub space deploy`),
then the environment, which overrides it:

- ``SEAL_REPLAY_RUN`` / ``SEAL_REPLAY_REVISION``: the run (and revision) opened first;
- deployed mode when ``replay.json`` says ``"public": true`` (every deploy writes it), when Hugging Face's
  ``SPACE_ID`` is set, or when ``SEAL_REPLAY_PUBLIC=1`` (``seal-hub space --public``);
- ``SEAL_REPLAY_RUNS`` / ``SEAL_REPLAY_POLICIES`` (comma-separated): the runs (``NS`` or ``NS/RUN``) and live
  policies a deployed Space offers (else ``replay.json``'s ``runs`` / ``policies``, else the run's namespace and
  ``tiny``);
- ``SEAL_REPLAY_LIVE_STEPS``, ``SEAL_REPLAY_LIVE_CONCURRENCY`` (live episodes at once), ``SEAL_REPLAY_QUEUE_SIZE``
  (events the queue holds), ``SEAL_REPLAY_POLICY_COUNT`` and ``SEAL_REPLAY_POLICY_MB`` (the loaded-policy LRU).

`access()` gives the visitor rules (`seal_hub.replay.access.Access`) these settings mean. Bad values fail at
start-up with the variable's name.

Not covered: the checks themselves (`seal_hub.replay.access`), the page (`seal_hub.replay.space_app`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from seal_hub.replay.access import TINY, Access, deployed

CONFIG_FILE = "replay.json"


@dataclass(frozen=True)
class SpaceSettings:
    run: str = field(default="", metadata={"help": "The run opened first (NS/RUN, hf://NS/RUN, a directory)."})
    revision: str = field(default="", metadata={"help": "Its revision (a deployed Space: the pinned tag)."})
    public: bool = field(default=False, metadata={"help": "Deployed mode: allowlists instead of free input."})
    runs: tuple[str, ...] = field(default=(), metadata={"help": "Deployed: namespaces (NS) or runs (NS/RUN)."})
    policies: tuple[str, ...] = field(default=(), metadata={"help": "Deployed: the live policies offered."})
    live_steps: int = field(default=8, metadata={"help": "Model steps of one live episode."})
    live_concurrency: int = field(default=4, metadata={"help": "Live episodes running at once (all visitors)."})
    queue_size: int = field(default=64, metadata={"help": "Events Gradio's queue holds before refusing more."})
    policy_count: int = field(default=2, metadata={"help": "Loaded policies kept (LRU)."})
    policy_mb: int = field(default=1024, metadata={"help": "Megabytes of loaded policy weights kept (LRU)."})

    def __post_init__(self) -> None:
        for name in ("live_steps", "live_concurrency", "queue_size", "policy_count", "policy_mb"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.public and not self.run:
            raise ValueError("deployed mode needs the run it shows: set SEAL_REPLAY_RUN or pass --run")

    @classmethod
    def read(cls, folder: Path, environ: Mapping[str, str] = os.environ) -> SpaceSettings:
        config_path = folder / CONFIG_FILE
        pinned = json.loads(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}
        env_run = environ.get("SEAL_REPLAY_RUN", "")
        run = env_run or pinned.get("run", "")
        revision = environ.get("SEAL_REPLAY_REVISION", "") if env_run else pinned.get("revision", "")
        public = (
            bool(pinned.get("public")) or bool(environ.get("SPACE_ID")) or environ.get("SEAL_REPLAY_PUBLIC") == "1"
        )
        return cls(
            run=run,
            revision=revision or "",
            public=public,
            runs=_names(environ.get("SEAL_REPLAY_RUNS")) or tuple(pinned.get("runs", ())),
            policies=_names(environ.get("SEAL_REPLAY_POLICIES")) or tuple(pinned.get("policies", ())),
            **{name: _number(environ, name) for name in _NUMBERS if f"SEAL_REPLAY_{name.upper()}" in environ},
        )

    def access(self) -> Access:
        if self.public:
            return deployed(self.run, self.runs, self.policies or (TINY,))
        return Access(policies=tuple(dict.fromkeys([TINY, "demo", *self.policies])))


_NUMBERS = ("live_steps", "live_concurrency", "queue_size", "policy_count", "policy_mb")


def _names(value: str | None) -> tuple[str, ...]:
    return tuple(name.strip() for name in (value or "").split(",") if name.strip())


def _number(environ: Mapping[str, str], name: str) -> int:
    variable = f"SEAL_REPLAY_{name.upper()}"
    try:
        return int(environ[variable])
    except ValueError:
        raise ValueError(f"{variable}={environ[variable]!r} is not a whole number") from None
