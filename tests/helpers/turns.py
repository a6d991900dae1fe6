"""A trajectory (turn -> steps -> calls) played through a BFCL episode, as the trajectory records and turn labels
the rollout engine and the diagnosis would make of it (test_diagnosis, scripts/perturbed_label_profile.py)."""

from __future__ import annotations

from seal_hub.envs.bfcl import EpisodeConfig
from seal_hub.envs.bfcl.labels import label_turn
from seal_hub.envs.protocol import Action
from seal_hub.rollout.records import StepRecord, TurnRecord, VerdictRecord

BFCL_PROTOCOL = EpisodeConfig(allow_hidden_tools=True)


def replay_turns(suite, task, steps, config=BFCL_PROTOCOL):
    """Run a trajectory through an episode and return its turns as trajectory records."""
    episode = suite.episode(task, config)
    episode.reset()
    for turn in steps:
        for calls in turn:
            if calls and not episode.done:
                episode.step(Action(tool_calls=tuple(calls)))
        if not episode.done:
            episode.step(Action(content="done"))
    verdict = episode.verdict
    records = []
    for index, turn in enumerate(episode.history):
        step_records = [StepRecord.of(action, results) for action, results in turn.steps]
        v = verdict.turns[index] if index < len(verdict.turns) else None
        records.append(
            TurnRecord(
                index=index,
                steps=step_records,
                verdict=None if v is None else VerdictRecord.of(v),
            )
        )
    return records, verdict


def labels_of(suite, task, steps, **kw):
    records, verdict = replay_turns(suite, task, steps, **kw)
    return [label_turn(r, task.ground_truth[r.index]) for r in records], verdict
