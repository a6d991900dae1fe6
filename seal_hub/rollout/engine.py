"""Batched multi-turn rollouts: many episodes at once, one generation call per step for all of them.

Each live episode keeps its token sequence, append-only: the first prompt (system + tools + first user turn,
rendered by the tokenizer's chat template), then alternately the policy's sampled tokens (mask 1, with their
log-probabilities) and the environment's tokens (mask 0): tool results, the next user turn, and the template's
framing around them. The environment's part is the chat template's own rendering of the new messages, cut
after the last end-of-turn token of the conversation so far, so the sequence is what the template would
render while the sampled tokens stay exactly as sampled. A generation may end on any of the model's end tokens
(`seal_hub.models.end_tokens`: Qwen2.5's ``<|endoftext|>`` as well as ``<|im_end|>``, Llama-3.1's ``<|eom_id|>``
as well as ``<|eot_id|>``); that token stays where the template would have put its end-of-turn. Tools revealed
at a later turn (miss_func) are listed in that turn's user message, as BFCL's prompting protocol does, which
keeps the sequence append-only (re-rendering the system prompt would change tokens the earlier steps were
conditioned on). A step with more calls than the template takes in one message (Llama-3.1's takes one) is
given to the template as the text the model wrote, so the episode goes on and every call still runs.

Per step, every live episode that waits for the model goes into one `GenerationBackend.generate` call; its
output is parsed into tool calls (`seal_hub.models.toolcalls`, in the style the chat template teaches unless
`parser_style` is given: `seal_hub.models.parser_style`), stepped through the environment, and the episode
either continues or finishes independently. Rollouts of the same task start together so their shared prefix
is computed once. An episode whose next prompt would not fit the context ends with truncation
`context_limit` (reward 0), never an exception.

What the agent is shown (tool schemas, a system prompt, how tool results read) goes through the learning
interface (`seal_hub.interface`); the null interface is BFCL's own protocol. Each episode keeps the
interface it started with, so a trainer can swap in a new version between batches.
"""

from __future__ import annotations

import itertools
import json
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jinja2
from tqdm.auto import tqdm

from seal_hub.config_checks import require_at_least_one
from seal_hub.defaults import MAX_CONTEXT_TOKENS, MAX_LIVE_EPISODES
from seal_hub.envs.episode import EpisodeSettings
from seal_hub.envs.protocol import Action, Message, Observation
from seal_hub.envs.suite import Suite, SuiteTask
from seal_hub.generation.backend import Generation, GenerationBackend, GenerationRequest, SamplingConfig
from seal_hub.interface import InterfaceSnapshot
from seal_hub.models.default_system import template_default_system
from seal_hub.models.end_tokens import template_end_of_turn
from seal_hub.models.parser_style import resolve_parser_style
from seal_hub.models.toolcalls import ToolCallParser, check_parser_style
from seal_hub.rollout.records import (
    CallRecord,
    MessageRecord,
    StepRecord,
    Trajectory,
    TurnRecord,
    VerdictRecord,
)

# Episodes of a batch finish together, near its end: a rate from the first finished ones would predict hours for
# minutes, so progress bars show what is done and the time so far, not an ETA.
DONE_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} {unit} done [{elapsed}{postfix}]"


class TemplateError(ValueError):
    """The chat template does not render conversations append-only, so token sequences cannot be kept."""


@dataclass(frozen=True)
class RolloutConfig:
    num_generations: int = field(default=1, metadata={"help": "Rollouts per task (the GRPO group size)."})
    max_live_episodes: int = field(
        default=MAX_LIVE_EPISODES, metadata={"help": "Episodes generated together in one batch."}
    )
    max_context_tokens: int = field(
        default=MAX_CONTEXT_TOKENS, metadata={"help": "Longest token sequence of one episode."}
    )
    parser_style: str | None = field(
        default=None,
        metadata={"help": "Tool-call format: hermes, llama3 or pythonic; unset: inferred from the chat template."},
    )
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    # what every suite's episodes read (a suite's own subclass, such as BFCL's `EpisodeConfig`, passes through)
    episode: EpisodeSettings = field(default_factory=EpisodeSettings)

    def __post_init__(self) -> None:
        require_at_least_one(self, "num_generations", "max_live_episodes", "max_context_tokens")
        check_parser_style(self.parser_style)


@dataclass(frozen=True)
class PolicyInfo:
    policy_id: str
    revision: str | None = None


class ChatRenderer:
    """Token ids from chat messages through the tokenizer's chat template, keeping sequences append-only."""

    def __init__(self, tokenizer, end_of_turn: str) -> None:
        self.tokenizer = tokenizer
        self.end_of_turn = end_of_turn

    def text(self, messages: list[dict[str, Any]], tools: Sequence[dict[str, Any]], generation_prompt: bool) -> str:
        return self.tokenizer.apply_chat_template(
            messages, tools=list(tools) or None, add_generation_prompt=generation_prompt, tokenize=False
        )

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def continuation(self, before: list[dict], after: list[dict], tools: Sequence[dict], closed: bool) -> str:
        """The text the template adds after the policy's last output when `after` extends `before`."""
        old = self.text(before, tools, generation_prompt=False)
        new = self.text(after, tools, generation_prompt=True)
        if not new.startswith(old):
            raise TemplateError("the chat template re-renders earlier messages when one is appended")
        cut = old.rfind(self.end_of_turn)
        tail = old[cut + len(self.end_of_turn) :] if cut >= 0 else ""
        return ("" if closed else self.end_of_turn) + tail + new[len(old) :]


def revealed_tools_message(message: Message, new_tools: Sequence[dict[str, Any]]) -> dict[str, str]:
    """The user message of a reveal turn with the new tools listed before it (BFCL prompting style)."""
    listing = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in new_tools)
    return {"role": message.role, "content": f"{listing}\n{message.content}"}


def first_messages(
    interface: InterfaceSnapshot, observation: Observation, default_system: str | None = None
) -> tuple[list[dict], list[dict]]:
    """The first prompt as the agent sees it through `interface`: the task's messages, and the tools rendered with
    its schema cues. The interface's system text (its note and guidelines) is added to the system prompt the
    conversation has, never put in its place: after the task's own system message when it has one, else after
    the chat template's default (`default_system`, `seal_hub.models.default_system`: Qwen2.5's "You are Qwen,
    ..."), which a system message of the interface's own would otherwise replace. `seal_hub.environment` builds
    episodes with it too."""
    tools = interface.render_tools(observation.tools)
    messages: list[dict[str, Any]] = [m.to_chat() for m in observation.messages]
    system = interface.system_prompt()
    if system is None:
        return messages, tools
    if messages and messages[0]["role"] == "system":
        return [messages[0] | {"content": f"{messages[0]['content']}\n\n{system}"}, *messages[1:]], tools
    content = f"{default_system}\n\n{system}" if default_system else system
    return [{"role": "system", "content": content}, *messages], tools


def assistant_message(action: Action) -> dict[str, Any]:
    """The policy's step as a chat message: its text and the calls parsed from it (no ``tool_calls`` key when there
    are none: Llama-3.1's template refuses an assistant message whose ``tool_calls`` is not exactly one call)."""
    message: dict[str, Any] = {"role": "assistant", "content": action.content}
    if action.tool_calls:
        message["tool_calls"] = [c.to_chat() for c in action.tool_calls]
    return message


def observation_messages(
    interface: InterfaceSnapshot, tools: Sequence[dict[str, Any]], observation: Observation
) -> list[dict[str, Any]]:
    """What a step adds to the conversation: tool results rendered by `interface` (with its recovery hints), then
    the next user turn, with tools revealed at that turn listed before it (`tools`: those shown at the start)."""
    out = [r.to_chat() | {"content": interface.render_result(r)} for r in observation.tool_results]
    if observation.tools_changed and observation.messages:
        known = {t["function"]["name"] for t in tools}
        new_tools = interface.render_tools([t for t in observation.tools if t["function"]["name"] not in known])
        first, *rest = observation.messages
        out.append(revealed_tools_message(first, new_tools))
        out += [m.to_chat() for m in rest]
    else:
        out += [m.to_chat() for m in observation.messages]
    return out


class _Live:
    """One episode in flight: its environment episode, conversation, token sequence and records."""

    def __init__(self, engine: RolloutEngine, task: SuiteTask, index: int, session: str) -> None:
        self.engine, self.task, self.index, self.session = engine, task, index, session
        self.episode = engine.suite.episode(task, engine.config.episode)
        self.started = time.perf_counter()
        self.generation_seconds = self.environment_seconds = 0.0
        observation = self.episode.reset()
        self.interface = engine.interface  # fixed for the whole episode, even if the engine's changes meanwhile
        self.messages, self.tools = first_messages(self.interface, observation, engine.default_system)
        self.shown = list(self.messages)  # what the chat template renders (`_shown_step`); `messages` is the record
        self.ids = engine.renderer.encode(engine.renderer.text(self.messages, self.tools, generation_prompt=True))
        self.prompt_length = len(self.ids)
        self.mask = [0] * len(self.ids)
        self.logprobs = [0.0] * len(self.ids)
        self.turns: list[list[StepRecord]] = [[]]
        self.truncation: str | None = None
        self.done = False
        self._check_room()

    def _shown_step(self, message: dict[str, Any], text: str) -> dict[str, Any]:
        """The policy's step as the template is given it: with its parsed calls, or, where the template refuses
        them (Llama-3.1's takes one call per message), as the text the model wrote. Its tokens are the model's own
        either way; the template only renders what follows them."""
        if len(message.get("tool_calls", ())) < 2:
            return message
        try:
            self.engine.renderer.text(self.shown + [message], self.tools, generation_prompt=False)
        except jinja2.TemplateError:
            return {"role": "assistant", "content": text}
        return message

    def _check_room(self, incoming: int = 0) -> bool:
        """Whether `incoming` more tokens leave room to generate one; if not, the episode ends (context_limit)."""
        if len(self.ids) + incoming + 1 > self.engine.config.max_context_tokens:
            self.done, self.truncation = True, "context_limit"
            return False
        return True

    def request(self) -> GenerationRequest:
        room = self.engine.config.max_context_tokens - len(self.ids)
        limit = min(self.engine.config.sampling.max_new_tokens, room)
        return GenerationRequest(self.session, tuple(self.ids), self.prompt_length, limit)

    def apply(self, generation: Generation, seconds: float) -> None:
        self.generation_seconds += seconds
        renderer = self.engine.renderer
        self.ids += generation.token_ids
        self.mask += [1] * len(generation.token_ids)
        self.logprobs += generation.logprobs
        # a finished generation ends on one of the model's end tokens (not always the template's end-of-turn)
        said = generation.token_ids[:-1] if generation.finished else generation.token_ids
        text = self.engine.tokenizer.decode(list(said), skip_special_tokens=False)
        action = self.engine.parser.parse(text)
        mine = assistant_message(action)
        before = self.messages + [mine]
        start = time.perf_counter()
        step = self.episode.step(action)
        self.environment_seconds += time.perf_counter() - start
        self.turns[-1].append(
            StepRecord.of(
                action,
                step.observation.tool_results,
                text=text,
                num_tokens=len(generation.token_ids),
                finished=generation.finished,
            )
        )
        added = observation_messages(self.interface, self.tools, step.observation)
        self.messages = before + added
        shown_before = self.shown + [self._shown_step(mine, text)]
        self.shown = shown_before + added
        if step.done:
            self.done = True
            self.truncation = "step_limit" if step.truncated else None
            return
        if step.observation.messages:
            self.turns.append([])
        text = renderer.continuation(shown_before, self.shown, self.tools, closed=generation.finished)
        env_ids = renderer.encode(text)
        if self._check_room(len(env_ids)):
            self.ids += env_ids
            self.mask += [0] * len(env_ids)
            self.logprobs += [0.0] * len(env_ids)

    def trajectory(self) -> Trajectory:
        self.episode.close()
        verdict = self.episode.verdict
        turns = [
            TurnRecord(
                index=i,
                steps=steps,
                verdict=VerdictRecord.of(verdict.turns[i]) if i < len(verdict.turns) else None,
            )
            for i, steps in enumerate(self.turns)
        ]
        policy = self.engine.policy
        return Trajectory(
            task_id=self.task.id,
            category=self.task.category,
            rollout_index=self.index,
            seed=self.engine.config.sampling.seed,
            policy_id=policy.policy_id,
            policy_revision=policy.revision,
            interface_version=self.interface.version,
            messages=[_message(m) for m in self.messages],
            turns=turns,
            reward=verdict.reward,
            passed=verdict.passed,
            error_type="multi_turn:force_terminated" if self.truncation else verdict.error_type,
            truncated=self.truncation is not None,
            truncation=self.truncation,
            prompt_length=self.prompt_length,
            token_ids=self.ids,
            token_mask=self.mask,
            logprobs=self.logprobs,
            num_steps=sum(len(steps) for steps in self.turns),
            num_generated_tokens=sum(self.mask),
            generation_seconds=self.generation_seconds,
            environment_seconds=self.environment_seconds,
            total_seconds=time.perf_counter() - self.started,
        )


def _message(message: dict[str, Any]) -> MessageRecord:
    calls = [
        CallRecord(name=str(c["function"]["name"]), arguments=json.dumps(c["function"]["arguments"], default=str))
        for c in message.get("tool_calls") or []
    ]
    return MessageRecord(role=message["role"], content=str(message.get("content") or ""), tool_calls=calls)


class RolloutEngine:
    """Runs tasks to completion through a generation backend and the environment; returns trajectories."""

    def __init__(
        self,
        backend: GenerationBackend,
        tokenizer,
        suite: Suite,
        config: RolloutConfig | None = None,
        policy: PolicyInfo | None = None,
        interface: InterfaceSnapshot | None = None,
        end_of_turn: str | None = None,
    ) -> None:
        self.backend = backend
        self.tokenizer = tokenizer
        self.suite = suite
        self.config = config or RolloutConfig()
        self.policy = policy or PolicyInfo("unknown")
        self.interface = interface or InterfaceSnapshot.null(suite.name)
        eot = end_of_turn or template_end_of_turn(tokenizer) or tokenizer.eos_token
        if not eot:
            raise ValueError("the tokenizer has no eos_token; pass end_of_turn (e.g. '<|im_end|>')")
        self.renderer = ChatRenderer(tokenizer, eot)
        self.default_system = template_default_system(tokenizer)  # kept when the interface adds a system text
        self.parser = ToolCallParser(style=resolve_parser_style(tokenizer, self.config.parser_style))
        self._sessions = itertools.count()

    def run(
        self,
        tasks: Sequence[SuiteTask],
        progress: bool = False,
        on_trajectory: Callable[[Trajectory], None] | None = None,
    ) -> list[Trajectory]:
        """Roll out every task `num_generations` times; trajectories come back in input order.

        A task may appear several times (a trainer passes each prompt repeated once per generation): every
        entry is its own episode, and `rollout_index` counts the entries of the same task.
        """
        seen: dict[str, int] = {}
        queue: deque[tuple[int, SuiteTask, int]] = deque()
        for task in tasks:
            for _ in range(self.config.num_generations):
                index = seen.get(task.id, 0)
                seen[task.id] = index + 1
                queue.append((len(queue), task, index))
        results: list[Trajectory | None] = [None] * len(queue)
        live: list[tuple[int, _Live]] = []
        bar = tqdm(total=len(queue), desc="rollouts", unit="episodes", bar_format=DONE_FORMAT, disable=not progress)
        tokens = 0
        try:
            while queue or live:
                while queue and len(live) < self.config.max_live_episodes:
                    position, task, index = queue.popleft()
                    live.append((position, _Live(self, task, index, f"{task.id}#{index}#{next(self._sessions)}")))
                waiting = [episode for _, episode in live if not episode.done]
                if waiting:
                    start = time.perf_counter()
                    generations = self.backend.generate([e.request() for e in waiting], self.config.sampling)
                    seconds = time.perf_counter() - start
                    for episode, generation in zip(waiting, generations, strict=True):
                        episode.apply(generation, seconds)
                    tokens += sum(len(g.token_ids) for g in generations)
                    bar.set_postfix_str(f"{tokens:,} tokens generated, {len(live)} live", refresh=True)
                for position, episode in [item for item in live if item[1].done]:
                    live.remove((position, episode))
                    self.backend.release(episode.session)
                    results[position] = trajectory = episode.trajectory()
                    if on_trajectory is not None:
                        on_trajectory(trajectory)
                    bar.update(1)
            self.backend.finish()  # synced generation: wait, stepping, for the other ranks
        finally:
            bar.close()
        return results
