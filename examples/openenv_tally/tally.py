"""The tally as TRL's `GRPOTrainer(environment_factory=...)` takes an environment: a class wrapping OpenEnv's client.

Its public methods are the tools (`add`, `read`), `reset(**row)` opens a session on the tally server and starts
the row's episode there, and `get_reward()` gives the reward the server sent with its last observation, then
closes the session. The server is where the state lives (`server.py`); it is found at `$TALLY_URL` (default
`http://127.0.0.1:8011`). One instance is one episode is one server session, so a run keeps as many sessions open
as it keeps episodes live.

OpenEnv's client is async; this class uses its synchronous wrapper (`EnvClient.sync()`: its own event loop on a
background thread), so every method is a plain call, as TRL's class form expects. A server that is gone makes a
tool raise (`ConnectionError`, or the closed WebSocket's error) and `reset` raise, as any tool or reset that fails;
`get_reward` never talks to the server, so a finished episode keeps its score. Nothing here knows seal_hub.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from openenv.core import EnvClient
from openenv.core.client_types import StepResult
from openenv.core.env_server.types import State

from examples.openenv_tally.models import TallyAction, TallyObservation

DEFAULT_URL = "http://127.0.0.1:8011"


class TallyClient(EnvClient[TallyAction, TallyObservation, State]):
    """OpenEnv's WebSocket client for the tally server: actions out, observations back."""

    def _step_payload(self, action: TallyAction) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[TallyObservation]:
        observation = TallyObservation(**payload.get("observation", {}), reward=payload.get("reward"))
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload)


class Tally:
    """A tally that starts at the row's `start`; the task is to bring it to the row's `target`."""

    def __init__(self) -> None:
        url = os.environ.get("TALLY_URL", DEFAULT_URL)
        self._client = TallyClient(base_url=url, connect_timeout_s=5.0, message_timeout_s=10.0).sync()
        self._reward = 0.0

    def reset(self, start: int = 0, target: int = 0, **row: Any) -> None:
        """Open a session and start the row's episode on the server."""
        self._record(self._client.reset(start=start, target=target))

    def add(self, amount: int) -> str:
        """Add to the tally; a negative amount subtracts.

        Args:
            amount: how much to add
        """
        return self._record(self._client.step(TallyAction(tool="add", amount=amount)))

    def read(self) -> str:
        """Read the tally's current value."""
        return self._record(self._client.step(TallyAction(tool="read")))

    def get_reward(self) -> float:
        """The reward the server gave with its last observation; the session is closed here."""
        with contextlib.suppress(Exception):  # a server already gone has nothing to close; the score stands
            self._client.close()
        return self._reward

    def _record(self, result: StepResult[TallyObservation]) -> str:
        self._reward = float(result.reward or 0.0)
        return result.observation.message
