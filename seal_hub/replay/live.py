"""Live mode: a policy plays one task under a chosen interface version, and each model step streams out.

`LiveRunner.stream(request)` is a generator of `LiveFrame`s: after every model step (its text, its tool calls
and their results) it yields the chat so far, rendered like a recorded episode (`seal_hub.replay.chat`); at
the end it yields the verified episode with its verdicts and diagnosis labels. The episode is the rollout
engine's own single-episode state (`seal_hub.rollout.engine`), stepped one generation at a time rather than
run to completion, so what streams is exactly what a training rollout would record.

Limits: `LiveLimits` caps model steps, tokens per step and wall-clock seconds; an episode that reaches one
stops with a frame whose `status` says which limit it hit (never an exception). Each call builds its own
engine and episode, so visitors never share an episode; loaded policies (read-only weights) are kept, keyed
by name. Policies: ``tiny`` (a tiny random model built in the cache), ``demo`` (the offline demo model), a
local model path, or a published adapter reference (``NS/RUN-adapter@iter-2``, loaded with
`seal_hub.hub.load_adapter` on its base).

Not covered: batching several live episodes, GPU policies.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seal_hub.interface import InterfaceSnapshot
from seal_hub.replay.chat import render_episode
from seal_hub.replay.episodes import ReplayError
from seal_hub.rollout.records import Trajectory, TurnRecord


@dataclass(frozen=True)
class LiveLimits:
    max_steps: int = field(default=12, metadata={"help": "Model steps before a live episode is stopped."})
    max_new_tokens: int = field(default=48, metadata={"help": "Tokens one model step may generate."})
    max_seconds: float = field(default=60.0, metadata={"help": "Wall-clock seconds before a live episode stops."})
    max_context_tokens: int = field(default=8192, metadata={"help": "Longest token sequence of a live episode."})

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


@dataclass
class LiveRunner:
    """Loads policies once and runs one fresh episode per `stream` call."""

    suite: Any
    limits: LiveLimits = field(default_factory=LiveLimits)
    _policies: dict[str, tuple[Any, Any, str]] = field(default_factory=dict)

    def policy(self, name: str) -> tuple[Any, Any, str]:
        """(model, tokenizer, policy id) for `name` (see the module docstring)."""
        name = name.strip()
        if name in self._policies:
            return self._policies[name]
        from seal_hub.hub import HubError, load_adapter
        from seal_hub.models import PolicyConfig, load_policy, named_policy_config

        try:
            if name in ("tiny", "demo"):
                model, tokenizer = load_policy(named_policy_config(name))
            elif Path(name).expanduser().is_dir():
                model, tokenizer = load_policy(named_policy_config(str(Path(name).expanduser())))
            else:
                model = load_adapter(name)
                from seal_hub.hub.loading import adapter_base, fetch

                base, _ = adapter_base(fetch(name, "model"))
                _, tokenizer = load_policy(PolicyConfig(model_name_or_path=base))
        except (HubError, OSError, ValueError) as exc:
            raise ReplayError(f"policy {name!r} cannot be loaded: {str(exc).splitlines()[0]}") from None
        model.eval()
        self._policies[name] = (model, tokenizer, name)
        return self._policies[name]

    def stream(self, request: LiveRequest) -> Iterator[LiveFrame]:
        """Run `request`, yielding the chat after every model step, then the verified episode."""
        from seal_hub.diagnosis import diagnose
        from seal_hub.models import end_token_ids
        from seal_hub.rollout import HFBackend, PolicyInfo, RolloutConfig, RolloutEngine, SamplingConfig
        from seal_hub.rollout.engine import _Live

        try:
            task = self.suite.task(request.task_id)
        except KeyError:
            raise ReplayError(f"task {request.task_id!r} is not a BFCL task") from None
        model, tokenizer, policy_id = self.policy(request.policy)
        limits = self.limits
        sampling = SamplingConfig(temperature=0.0, max_new_tokens=limits.max_new_tokens, seed=request.seed)
        config = RolloutConfig(max_context_tokens=limits.max_context_tokens, sampling=sampling)
        backend = HFBackend(model, end_token_ids(model, tokenizer), tokenizer.pad_token_id or 0, seed=request.seed)
        engine = RolloutEngine(
            backend, tokenizer, self.suite, config, PolicyInfo(policy_id), interface=request.interface
        )
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
        diagnosis = diagnose(trajectory, task, self.suite.name)
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
