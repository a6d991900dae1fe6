"""The tally's wire records, shared by its OpenEnv server (`server.py`) and its client (`tally.py`).

An action names one tool (`add` or `read`) and its amount; an observation carries the tally's value, the task's
target and the tool's answer as text, with OpenEnv's own `reward` (1.0 when the value equals the target) and
`done` (never: the agent ends an episode by answering without a call).

Not covered: anything about serving or training (the server and the TRL-form class).
"""

from __future__ import annotations

from typing import Literal

from openenv.core.env_server.types import Action, Observation
from pydantic import Field


class TallyAction(Action):
    """One tool call: `add` (the amount, negative to subtract) or `read`."""

    tool: Literal["add", "read"] = Field(..., description="The tool to run")
    amount: int = Field(default=0, description="What `add` adds")


class TallyObservation(Observation):
    """The tally after the action, the task's target, and the tool's answer."""

    count: int = Field(default=0, description="The tally's value")
    target: int = Field(default=0, description="The value the task asks for")
    message: str = Field(default="", description="The tool's answer, as the agent sees it")
