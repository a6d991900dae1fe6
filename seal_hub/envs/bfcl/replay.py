"""Driving an episode with a fixed trajectory of calls (ground-truth replays, perturbation tests, benchmarks).

A trajectory is given per turn as a list of steps, each a list of structured calls: the shape of bfcl-eval's
decoded model results. Each non-empty step becomes one action with those calls; after a turn's steps an
action without calls ends the turn, as the agent's final message would.

`verify_ground_truth` replays the ground truth of many tasks, asks bfcl-eval's checker about the same
trajectories, and lists the ground-truth calls that the default *training* configuration would refuse or
label (BFCL data quirks), so a user knows which tasks the paper's stricter settings make unsolvable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tqdm.auto import tqdm

from seal_hub.envs.bfcl.episode import Episode, EpisodeConfig
from seal_hub.envs.bfcl.suite import BfclSuite
from seal_hub.envs.bfcl.tasks import Task
from seal_hub.envs.protocol import Action, EpisodeVerdict, ToolCall

Steps = Sequence[Sequence[Sequence[ToolCall]]]  # turn -> step -> calls


def ground_truth_steps(task: Task) -> list[list[list[ToolCall]]]:
    """The task's ground truth as a trajectory: one step per turn holding all of that turn's calls."""
    return [[list(calls)] if calls else [] for calls in task.ground_truth]


def replay(episode: Episode, steps: Steps) -> EpisodeVerdict:
    """Run `steps` through a fresh `episode` to its end and return the verdict (the episode is closed)."""
    with episode:
        episode.reset()
        for turn in steps:
            if episode.done:
                break
            for calls in turn:
                if calls and not episode.done:
                    episode.step(Action(tool_calls=tuple(calls)))
            if not episode.done:
                episode.step(Action(content="done"))
        return episode.verdict


@dataclass(frozen=True)
class GroundTruthReport:
    """Ground-truth replays of a set of tasks, with bfcl-eval's verdict on the same trajectories."""

    verified: tuple[str, ...]  # task ids whose replay our verifier passes
    failed: tuple[tuple[str, str | None], ...]  # (task id, our error type)
    disagreements: tuple[tuple[str, bool, bool], ...]  # (task id, ours passed, official passed)
    checked: int  # how many replays the official checker also judged
    quirks: tuple[str, ...]  # ground-truth calls the default training configuration refuses or labels

    @property
    def total(self) -> int:
        return len(self.verified) + len(self.failed)


def verify_ground_truth(suite: BfclSuite, tasks: Sequence[Task], progress: bool = False) -> GroundTruthReport:
    """Replay each task's ground truth (BFCL protocol: hidden tools run) and check it officially too."""
    from seal_hub.envs.bfcl.official import official_check  # bfcl-eval's eval-time imports, only when asked

    protocol = EpisodeConfig(allow_hidden_tools=True)
    verified, failed, disagreements, quirks = [], [], [], []
    for task in tqdm(tasks, desc="ground truth", unit="task", disable=not progress):
        steps = ground_truth_steps(task)
        verdict = replay(suite.episode(task, protocol), steps)
        (verified.append(task.id) if verdict.passed else failed.append((task.id, verdict.error_type)))
        official = official_check(task, steps)["valid"]
        if official != verdict.passed:
            disagreements.append((task.id, verdict.passed, official))
        quirks += _training_quirks(suite, task)
    return GroundTruthReport(tuple(verified), tuple(failed), tuple(disagreements), len(tasks), tuple(quirks))


def _training_quirks(suite: BfclSuite, task: Task) -> list[str]:
    """Ground-truth calls that the default (training) configuration refuses or labels, described."""
    found = []
    with suite.episode(task) as episode:
        episode.reset()
        for turn, calls in enumerate(task.ground_truth):
            if calls:
                for result in episode.step(Action(tool_calls=tuple(calls))).observation.tool_results:
                    if result.error_kind is not None and (not result.executed or result.note):
                        reason = result.note or result.content
                        found.append(f"{task.id} turn {turn}: {result.call.name} -> {result.error_kind}: {reason}")
            episode.step(Action(content="done"))
    return found
