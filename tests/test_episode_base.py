"""The one episode base: its caller guards, its parse-error observation, and the suite-neutral settings."""

from __future__ import annotations

import pytest

from seal_hub.envs.bfcl import EpisodeConfig
from seal_hub.envs.episode import EpisodeBase, EpisodeSettings, parse_error_results
from seal_hub.envs.protocol import (
    Action,
    EpisodeError,
    EpisodeVerdict,
    ErrorKind,
    Observation,
    ParseError,
    StepResult,
)


class _Task:
    id = "t0"
    category = "c"


class _Counter(EpisodeBase):
    """Two steps, then done; counts what the hooks saw."""

    released = 0

    def _start(self) -> Observation:
        self.steps = 0
        return Observation(0)

    def _step(self, action: Action) -> StepResult:
        self.steps += 1
        return StepResult(Observation(0, tool_results=parse_error_results(action)), done=self.done)

    def _release(self) -> None:
        self.released += 1

    @property
    def done(self) -> bool:
        return self.steps >= 2

    @property
    def verdict(self) -> EpisodeVerdict:
        return EpisodeVerdict((), 1)


def test_the_guards_refuse_misuse_and_let_the_hook_run_otherwise():
    episode = _Counter(_Task())
    with pytest.raises(EpisodeError, match="call reset"):
        episode.step(Action())
    episode.reset()
    episode.step(Action())
    assert episode.step(Action()).done
    with pytest.raises(EpisodeError, match="is finished"):
        episode.step(Action())
    episode.reset()  # a reset starts it again
    assert episode.steps == 0
    with episode:
        episode.step(Action())
    assert episode.released == 1
    with pytest.raises(EpisodeError, match="call reset"):
        episode.step(Action())
    with pytest.raises(EpisodeError, match="is closed"):
        episode.reset()


def test_parse_errors_come_back_as_one_observation_each():
    action = Action(parse_errors=(ParseError("json", "bad brace", "{"), ParseError("json", "no name")))
    results = parse_error_results(action)
    assert [r.error_kind for r in results] == [ErrorKind.PARSE_ERROR] * 2
    assert results[0].content == "Error: could not parse a tool call (json): bad brace"
    assert all(r.call is None and not r.executed for r in results)


def test_settings_refuse_counts_below_one_and_bfcl_reads_plain_settings_as_its_defaults():
    with pytest.raises(ValueError, match="max_steps_per_turn must be >= 1, got 0"):
        EpisodeSettings(max_steps_per_turn=0)
    with pytest.raises(ValueError, match=r"max_steps_per_episode must be >= 1 or None \(no cap\), got 0"):
        EpisodeConfig(max_steps_per_episode=0)
    assert EpisodeConfig.of(EpisodeSettings(3, 7)) == EpisodeConfig(max_steps_per_turn=3, max_steps_per_episode=7)
    assert EpisodeConfig.of(None) == EpisodeConfig()
    bfcl = EpisodeConfig(step_limit="bfcl")
    assert EpisodeConfig.of(bfcl) is bfcl
