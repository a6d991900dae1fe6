"""A tally served the way OpenEnv serves an environment: its server classes, one session per WebSocket client.

`TallyEnvironment` is an `openenv` `Environment`: `reset(start=..., target=...)` starts a session's episode,
`step(TallyAction)` runs `add` or `read` on that session's own count, and every observation carries OpenEnv's
reward (1.0 when the count equals the target). `SUPPORTS_CONCURRENT_SESSIONS` is true (nothing is shared between
instances), so the server gives every connected client its own instance, up to `--max_sessions` at once: a trainer
needs one session per episode it keeps live.

Run it on loopback, no Docker and no Hub (from the repository's root):
`python -m examples.openenv_tally.server --port 8011 --max_sessions 32`; `GET /health` answers once it is up.

Not covered: the client and the TRL-form class that wraps it (`tally.py`).
"""

from __future__ import annotations

import argparse
from typing import Any
from uuid import uuid4

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import State

from examples.openenv_tally.models import TallyAction, TallyObservation


class TallyEnvironment(Environment):
    """One session's tally: a count, the target the task asks for, the steps taken."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=str(uuid4()), step_count=0)
        self._count = self._target = 0

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, start: int = 0, target: int = 0, **kwargs: Any
    ) -> TallyObservation:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        self._count, self._target = int(start), int(target)
        return self._observe("")

    def step(self, action: TallyAction, timeout_s: float | None = None, **kwargs: Any) -> TallyObservation:
        self._state.step_count += 1
        if action.tool == "add":
            self._count += action.amount
            return self._observe(f"added {action.amount}; the tally is {self._count}")
        return self._observe(f"the tally is {self._count}")

    @property
    def state(self) -> State:
        return self._state

    def _observe(self, message: str) -> TallyObservation:
        reward = 1.0 if self._count == self._target else 0.0
        return TallyObservation(count=self._count, target=self._target, message=message, reward=reward)


def make_app(max_sessions: int):
    """The FastAPI app OpenEnv builds around the environment: /health, /reset, /step, /state and the /ws sessions."""
    return create_app(
        TallyEnvironment, TallyAction, TallyObservation, env_name="tally", max_concurrent_envs=max_sessions
    )


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--max_sessions", type=int, default=32, help="WebSocket sessions served at once")
    args = parser.parse_args()
    uvicorn.run(make_app(args.max_sessions), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
