"""Live mode: a policy plays one task under a chosen environment version, and each model step streams out.

`LiveRunner.stream(request)` is a generator of `LiveFrame`s: after every model step (its text, its tool calls
and their results) it yields the chat so far, rendered like a recorded episode (`seal_hub.replay.chat`); at
the end it yields the verified episode with its verdicts and diagnosis labels. The episode is the rollout
engine's own single-episode state (`seal_hub.rollout.engine`), stepped one generation at a time rather than
run to completion, so what streams is exactly what a training rollout would record.

Limits: `LiveLimits` caps model steps, tokens per step and wall-clock seconds; an episode that reaches one
stops with a frame whose `status` says which limit it hit (never an exception). Each call builds its own
engine and episode, so visitors never share an episode; loaded policies (read-only weights) are shared through
a `seal_hub.replay.policies.PolicyCache`, bounded by count and bytes. Policies: ``tiny`` (a tiny random model
built in the cache), ``demo`` (the offline demo model), a local model path, a model id, or a published adapter
reference (``NS/RUN-adapter@iter-2``, on its base). A `LiveSlot` (one per visitor, kept in the visitor's
session) lets a visitor hold one live episode at a time.

Not covered: batching several live episodes, GPU policies.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from seal_hub.defaults import MAX_CONTEXT_TOKENS
from seal_hub.interface import InterfaceSnapshot
from seal_hub.replay.chat import render_episode
from seal_hub.replay.episodes import ReplayError
from seal_hub.replay.policies import PolicyCache, load_named
from seal_hub.replay.quiet import cut
from seal_hub.rollout.records import Trajectory, TurnRecord


@dataclass(frozen=True)
class LiveLimits:
    max_steps: int = field(default=12, metadata={"help": "Model steps before a live episode is stopped."})
    max_new_tokens: int = field(default=48, metadata={"help": "Tokens one model step may generate."})
    max_seconds: float = field(default=60.0, metadata={"help": "Wall-clock seconds before a live episode stops."})
    max_context_tokens: int = field(
        default=MAX_CONTEXT_TOKENS, metadata={"help": "Longest token sequence of a live episode."}
    )

    def __post_init__(self) -> None:
        for name in ("max_steps", "max_new_tokens", "max_context_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_seconds <= 0:
            raise ValueError(f"max_seconds must be > 0, got {self.max_seconds}")


@dataclass(frozen=True)
class LiveRequest:
    policy: str
    task_id: str
    interface: InterfaceSnapshot
    seed: int = 0


@dataclass(frozen=True)
class LiveFrame:
    messages: list[dict[str, Any]]
    status: str
    done: bool = False
    trajectory: Trajectory | None = None


class LiveSlot:
    """One visitor's right to a live episode: `hold()` refuses a second one while the first runs.

    Kept in the visitor's `gr.State`, which Gradio deep-copies per session: a copy is a free slot."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __deepcopy__(self, memo: dict) -> LiveSlot:
        return LiveSlot()

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    @contextmanager
    def hold(self) -> Iterator[None]:
        if not self._lock.acquire(blocking=False):
            raise ReplayError("your live episode is still running: wait for it to finish, then start another")
        try:
            yield
        finally:
            self._lock.release()


@dataclass
class LiveRunner:
    """Shares loaded policies (`policies`) and runs one fresh episode per `stream` call."""

    suite: Any
    limits: LiveLimits = field(default_factory=LiveLimits)
    policies: PolicyCache = field(default_factory=lambda: PolicyCache(load_named))

    def policy(self, name: str) -> tuple[Any, Any, str]:
        """(model, tokenizer, policy id) for `name` (see the module docstring)."""
        loaded = self.policies.get(name.strip())
        return loaded.model, loaded.tokenizer, loaded.name

    def stream(self, request: LiveRequest, suite: Any = None) -> Iterator[LiveFrame]:
        """Run `request` on `suite` (default: the runner's), yielding the chat after every model step, then the
        verified episode."""
        from seal_hub.generation import SamplingConfig, build_hf_backend
        from seal_hub.rollout import PolicyInfo, RolloutConfig, RolloutEngine
        from seal_hub.rollout.engine import _Live

        try:
            suite = suite if suite is not None else self.suite
            task = suite.task(request.task_id)
        except KeyError:
            raise ReplayError(f"task {cut(request.task_id)!r} is not a BFCL task") from None
        model, tokenizer, policy_id = self.policy(request.policy)
        limits = self.limits
        sampling = SamplingConfig(temperature=0.0, max_new_tokens=limits.max_new_tokens, seed=request.seed)
        config = RolloutConfig(max_context_tokens=limits.max_context_tokens, sampling=sampling)
        backend = build_hf_backend(model, tokenizer, seed=request.seed)
        engine = RolloutEngine(backend, tokenizer, suite, config, PolicyInfo(policy_id), interface=request.interface)
        started = time.perf_counter()
        episode = _Live(engine, task, 0, f"live-{id(self)}-{time.time_ns()}")
        steps = 0
        yield LiveFrame(
            _partial(episode, request).at(0), f"started: {task.id} under interface {request.interface.version}"
        )
        stopped = ""
        while not episode.done:
            if steps >= limits.max_steps:
                stopped = f"stopped: reached the live limit of {limits.max_steps} model steps"
                break
            if time.perf_counter() - started > limits.max_seconds:
                stopped = f"stopped: reached the live time limit of {limits.max_seconds:.0f} s"
                break
            start = time.perf_counter()
            generation = backend.generate([episode.request()], sampling)[0]
            episode.apply(generation, time.perf_counter() - start)
            steps += 1
            view = _partial(episode, request)
            yield LiveFrame(view.at(view.last_frame), f"step {steps}: {time.perf_counter() - started:.1f} s")
        backend.release(episode.session)
        trajectory = episode.trajectory()
        diagnosis = suite.diagnose(trajectory, task)
        labels = tuple(None if label is None else str(label) for label in diagnosis.labels)
        view = render_episode(trajectory, labels)
        outcome = "passed" if trajectory.passed else "failed"
        status = (stopped + "; " if stopped else "") + f"episode {outcome} after {steps} model steps"
        yield LiveFrame(view.at(view.last_frame), status, done=True, trajectory=trajectory)


def _partial(episode: Any, request: LiveRequest):
    """The episode so far as a record (no verdicts yet) rendered as chat."""
    from seal_hub.rollout.engine import _message

    trajectory = Trajectory(
        task_id=episode.task.id,
        category=episode.task.category,
        rollout_index=0,
        seed=request.seed,
        policy_id=request.policy,
        interface_version=request.interface.version,
        messages=[_message(m) for m in episode.messages],
        turns=[TurnRecord(index=i, steps=steps) for i, steps in enumerate(episode.turns)],
        reward=0.0,
        passed=False,
        prompt_length=episode.prompt_length,
        token_ids=[],
        token_mask=[],
        logprobs=[],
        num_steps=sum(len(s) for s in episode.turns),
        num_generated_tokens=0,
        generation_seconds=0.0,
        environment_seconds=0.0,
        total_seconds=0.0,
    )
    return render_episode(trajectory)
