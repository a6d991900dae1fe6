"""One BFCL single-turn episode: the question and the offered tools, one answer, one verdict.

`reset()` returns the question's messages (a system message first where BFCL has one) and the tools.
`step(action)` takes the model's one answer: its calls are checked, never executed (`checker.check`), and the
episode ends with reward 1 or 0. That is BFCL's single-turn protocol: one model response per question. An
answer with no call ends the episode too (right for irrelevance, wrong elsewhere).

Not covered: multi-step tool use (see `seal_hub.envs.bfcl` for executable multi-turn episodes).
"""

from __future__ import annotations

from typing import Any

from seal_hub.envs.bfcl_single.checker import check
from seal_hub.envs.bfcl_single.tasks import SingleTask
from seal_hub.envs.episode import EpisodeBase
from seal_hub.envs.protocol import Action, EpisodeVerdict, Observation, StepResult, TurnVerdict


class SingleEpisode(EpisodeBase):
    """A single-turn question answered once. `config` is accepted for the engine's sake and not used."""

    def __init__(self, task: SingleTask, config: Any = None) -> None:
        super().__init__(task)
        self._verdict: TurnVerdict | None = None

    def _start(self) -> Observation:
        self._verdict = None
        return Observation(0, messages=self.task.messages, tools=self.task.tools)

    def _step(self, action: Action) -> StepResult:
        self._verdict = check(self.task, action)
        return StepResult(Observation(0, tools=self.task.tools), done=True, reward=self.verdict.reward)

    @property
    def done(self) -> bool:
        return self._verdict is not None

    @property
    def tools(self) -> tuple[dict[str, Any], ...]:
        return self.task.tools

    @property
    def verdict(self) -> EpisodeVerdict:
        return EpisodeVerdict(() if self._verdict is None else (self._verdict,), 1)
