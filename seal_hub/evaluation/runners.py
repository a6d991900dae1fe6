"""What plays the agent in an evaluation: a model through the batched rollout engine, or the suite's oracle.

Both runners take tasks and hand each finished episode's `Trajectory` to a callback as soon as it ends (the
harness writes it to disk there, which is what makes a run resumable), and both step the suite's episodes
with the same `EpisodeSettings`, so the oracle checks exactly the protocol a model is scored under.

- `ModelRunner`: a `RolloutEngine` (batched generation, greedy under `EvalProtocol`).
- `OracleRunner`: no model; per turn it sends the suite's `oracle_steps` (the reference calls), then a plain
  message that ends the turn. Its records have the same features as a model's, with no tokens.

Not covered: loading models or adapters (`seal_hub.cli`, `seal_hub.hub.load_adapter`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from seal_hub.envs.protocol import Action, StepResult
from seal_hub.envs.suite import Suite, SuiteTask
from seal_hub.rollout.engine import PolicyInfo, RolloutEngine
from seal_hub.rollout.records import (
    CallRecord,
    MessageRecord,
    ResultRecord,
    StepRecord,
    Trajectory,
    TurnRecord,
    VerdictRecord,
)

OnTrajectory = Callable[[Trajectory], None]
ORACLE_ID = "oracle"
END_OF_TURN = "done"  # the oracle's final message of a turn


class Runner(Protocol):
    policy: PolicyInfo

    def run(self, tasks: Sequence[SuiteTask], on_trajectory: OnTrajectory) -> None: ...


class ModelRunner:
    """A policy through the batched engine; trajectories arrive as episodes finish, in any order."""

    def __init__(self, engine: RolloutEngine) -> None:
        self.engine = engine
        self.policy = engine.policy

    def run(self, tasks: Sequence[SuiteTask], on_trajectory: OnTrajectory) -> None:
        self.engine.run(tasks, progress=False, on_trajectory=on_trajectory)


class OracleRunner:
    """The suite's reference answers, stepped through the same episodes as a model would be."""

    def __init__(self, suite: Suite, episode_config: Any, interface_version: str = "v0") -> None:
        self.suite = suite
        self.episode_config = episode_config
        self.interface_version = interface_version
        self.policy = PolicyInfo(ORACLE_ID)

    def run(self, tasks: Sequence[SuiteTask], on_trajectory: OnTrajectory) -> None:
        for task in tasks:
            on_trajectory(self.trajectory(task))

    def trajectory(self, task: SuiteTask) -> Trajectory:
        started = time.perf_counter()
        episode = self.suite.episode(task, self.episode_config)
        observation = episode.reset()
        messages = [_message(m.role, m.content) for m in observation.messages]
        turns: list[list[StepRecord]] = [[]]
        truncated = False
        with_steps = list(self.suite.oracle_steps(task))
        for turn_actions in with_steps:
            if episode.done:
                break
            for action in [*turn_actions, Action(content=END_OF_TURN)]:
                if episode.done:
                    break
                step = episode.step(action)
                turns[-1].append(_step(action, step))
                messages.append(_message("assistant", action.content, action))
                messages += [_message("tool", r.content) for r in step.observation.tool_results]
                messages += [_message(m.role, m.content) for m in step.observation.messages]
                truncated = truncated or step.truncated
                if step.observation.messages:
                    turns.append([])
        episode.close()
        verdict = episode.verdict
        verdicts = [VerdictRecord.of(v) for v in verdict.turns]
        turn_records = [
            TurnRecord(index=i, steps=steps, verdict=verdicts[i] if i < len(verdicts) else None)
            for i, steps in enumerate(turns)
        ]
        seconds = time.perf_counter() - started
        return Trajectory(
            task_id=task.id,
            category=task.category,
            rollout_index=0,
            seed=0,
            policy_id=ORACLE_ID,
            interface_version=self.interface_version,
            messages=messages,
            turns=turn_records,
            reward=verdict.reward,
            passed=verdict.passed,
            error_type=verdict.error_type,
            truncated=truncated,
            truncation="step_limit" if truncated else None,
            prompt_length=0,
            token_ids=[],
            token_mask=[],
            logprobs=[],
            num_steps=sum(len(steps) for steps in turns),
            num_generated_tokens=0,
            generation_seconds=0.0,
            environment_seconds=seconds,
            total_seconds=seconds,
        )


def _message(role: str, content: str, action: Action | None = None) -> MessageRecord:
    calls = [CallRecord.of(call) for call in action.tool_calls] if action is not None else []
    return MessageRecord(role=role, content=content, tool_calls=calls)


def _step(action: Action, step: StepResult) -> StepRecord:
    calls = [CallRecord.of(call) for call in action.tool_calls]
    text = action.content or json.dumps([{"name": c.name, "arguments": json.loads(c.arguments)} for c in calls])
    return StepRecord(
        text=text,
        tool_calls=calls,
        results=[
            ResultRecord(content=r.content, error_kind=r.error_kind, executed=r.executed, note=r.note)
            for r in step.observation.tool_results
        ],
    )
