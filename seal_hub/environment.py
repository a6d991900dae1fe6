"""A published environment version as an environment to step, for any training code (no SealTrainer needed).

`load_environment("alice/run1-env@v3")` resolves the reference once to a commit
(`seal_hub.hub.sources.resolve_reference`) and returns an `Environment` over the tasks of the suite that version
names (`InterfaceSnapshot.suite`: BFCL v3 multi-turn, bfcl-single, ...; a user environment's version: its class and
dataset, from the record it keeps, `seal_hub.envs.user`) with that interface applied as the SEAL
trainer applies it: tools rendered with its schema cues, its note and
guidelines in the system prompt, tool errors answered with its recovery hints, tools revealed mid-episode listed
in that turn's user message. The conversation is built by the same functions as the rollout engine's
(`seal_hub.rollout.engine.first_messages`, `assistant_message`, `observation_messages`), so a chat template
renders the same tokens for the same task as it did in training (given its tokenizer: the template's own system
line, which training keeps before the interface's text). A complete episode:

    env = seal_hub.load_environment("alice/run1-env@v3", tokenizer=tokenizer)
    obs = env.reset("multi_turn_base_0")
    while not obs.done:
        obs = env.step(policy(obs.messages, obs.tools))  # your model: chat messages + tools -> reply text
    print(obs.reward, env.verdict)

The shape is OpenEnv's (`reset() -> observation`, `step(action) -> observation` carrying `reward` and `done`)
with the observation of verifiers' chat environments: `messages` (the whole conversation so far) and `tools`, in
the OpenAI / Hugging Face chat format, ready for `tokenizer.apply_chat_template(obs.messages, tools=obs.tools,
add_generation_prompt=True)` or a chat-completions call. A step takes the model's reply text (tool calls parsed in
the `parser_style` format; a reply without calls ends the user turn) or an already parsed `Action`. Model mistakes
come back as observations, never exceptions; stepping before `reset()` or after the end raises `EpisodeError`.

Design choice: training-only interfaces are applied here (`training=True`), because this is for training code;
`training=False` gives BFCL's original protocol for such a snapshot, as evaluation uses.

Not covered: batching and generation (`seal_hub.rollout.RolloutEngine` does both), and the turn labels
(`env.suite.diagnose(trajectory, task)`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seal_hub.envs.builtin import resolve_suite
from seal_hub.envs.episode import EpisodeSettings
from seal_hub.envs.protocol import Action, EpisodeError, EpisodeVerdict
from seal_hub.envs.suite import Suite, SuiteEpisode
from seal_hub.interface import InterfaceSnapshot, effective_interface, load_snapshot
from seal_hub.models.default_system import template_default_system
from seal_hub.models.toolcalls import ToolCallParser
from seal_hub.rollout.engine import assistant_message, first_messages, observation_messages

if TYPE_CHECKING:
    from seal_hub.hub.registry import Ref
    from seal_hub.hub.sources import Source


@dataclass(frozen=True)
class EnvObservation:
    """What the agent has after `reset()` or `step()`: the conversation so far and what this step added."""

    task_id: str
    messages: list[dict[str, Any]]  # the whole conversation, as the model sees it (chat-template dicts)
    tools: list[dict[str, Any]]  # the tools shown with the first prompt, rendered by the interface
    new_messages: list[dict[str, Any]] = field(default_factory=list)  # tool results, next user turn
    turn: int = 0
    done: bool = False
    truncated: bool = False  # ended by the step limit of a turn
    reward: float | None = None  # 1.0 only if every turn verified; set when done


class Environment:
    """A suite's episodes seen through one interface snapshot (the snapshot's suite unless `suite` is given)."""

    def __init__(
        self,
        interface: InterfaceSnapshot | None = None,
        *,
        source: Source | None = None,
        suite: Suite | None = None,
        episode: EpisodeSettings | None = None,
        parser_style: str = "hermes",
        split: str = "train",
        split_file: str | None = None,
        training: bool = True,
        tokenizer: Any = None,
    ) -> None:
        self.snapshot = interface or InterfaceSnapshot.null()
        self.interface = effective_interface(self.snapshot, training)  # what the agent is shown
        self.source = source
        # the suite the version names: a built-in one, or the user environment its record names
        self.suite = suite or resolve_suite(self.snapshot.suite, record=self.snapshot.user_environment)
        self.episode_config = episode or EpisodeSettings()  # each suite reads these as its own defaults plus them
        self.parser = ToolCallParser(style=parser_style)
        self.split, self.split_file = split, split_file
        self._task_ids: tuple[str, ...] | None = None
        self._next = 0
        self._episode: SuiteEpisode | None = None
        self._messages: list[dict[str, Any]] = []
        self._tools: list[dict[str, Any]] = []
        # the chat template's own system line (Qwen2.5's "You are Qwen, ..."), kept before the interface's text
        self.default_system = template_default_system(tokenizer) if tokenizer is not None else None

    def __repr__(self) -> str:
        where = self.source.describe() if self.source is not None else "a local snapshot"
        return f"Environment(interface {self.snapshot.version} from {where}, split {self.split!r})"

    @property
    def task_ids(self) -> tuple[str, ...]:
        """The task ids of the split (the suite's shipped split by default, bfcl's the paper's 400/400, or
        `split_file`)."""
        if self._task_ids is None:
            self._task_ids = self.suite.split_ids(self.split, self.split_file)
        return self._task_ids

    def reset(self, task_id: str | None = None) -> EnvObservation:
        """Start an episode of `task_id` (default: the split's next task, in order) and return the first prompt."""
        if task_id is None:
            task_id = self.task_ids[self._next % len(self.task_ids)]
            self._next += 1
        self.close()
        self._episode = self.suite.episode(task_id, self.episode_config)
        observation = self._episode.reset()
        self._messages, self._tools = first_messages(self.interface, observation, self.default_system)
        return EnvObservation(
            task_id, list(self._messages), list(self._tools), list(self._messages), observation.turn_index
        )

    def step(self, action: str | Action) -> EnvObservation:
        """Apply the model's reply (text, or a parsed `Action`) and return what the agent sees next."""
        if self._episode is None:
            raise EpisodeError("no episode in progress: call reset() (or reset(task_id)) first")
        parsed = self.parser.parse(action) if isinstance(action, str) else action
        before = self._messages + [assistant_message(parsed)]
        result = self._episode.step(parsed)
        added = observation_messages(self.interface, self._tools, result.observation)
        self._messages = before + added
        return EnvObservation(
            self._episode.task.id,
            list(self._messages),
            list(self._tools),
            added,
            result.observation.turn_index,
            result.done,
            result.truncated,
            result.reward,
        )

    @property
    def verdict(self) -> EpisodeVerdict:
        """The per-turn verdicts of the current (or last) episode."""
        if self._episode is None:
            raise EpisodeError("no episode yet: call reset() first")
        return self._episode.verdict

    def close(self) -> None:
        if self._episode is not None:
            self._episode.close()  # frees the API instances; the verdict stays readable

    def __enter__(self) -> Environment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def load_environment(ref: str | Ref | InterfaceSnapshot | None = None, **options: Any) -> Environment:
    """An `Environment` with the interface at `ref` applied, ready to `reset()` and `step()`.

    `ref`: a published environment version (``"alice/run1-env@v3"``, ``local://`` or ``hf://`` to choose the
    registry; resolved once to a commit, kept as `env.source`), a snapshot JSON file, an `InterfaceSnapshot`, or
    None for BFCL's original protocol. The episodes are of the suite the snapshot names. `options` go to
    `Environment` (``parser_style``, ``split``, ``split_file``, ``episode``, ``training``, ``suite``, and
    ``tokenizer``: the one whose chat template will render the messages, so that its own system line, where it
    writes one (`seal_hub.models.default_system`), stays before the interface's note and guidelines as in
    training; without it, the messages carry the interface's system text alone).
    A complete episode:

        env = seal_hub.load_environment("alice/run1-env@v3")
        obs = env.reset("multi_turn_base_0")
        while not obs.done:
            obs = env.step(policy(obs.messages, obs.tools))  # your model: chat messages + tools -> reply text
        print(obs.reward, env.verdict)
    """
    if ref is None or isinstance(ref, InterfaceSnapshot):
        return Environment(ref, **options)
    if isinstance(ref, str) and ref.endswith(".json") and Path(ref).expanduser().is_file():
        return Environment(load_snapshot(Path(ref).expanduser()), **options)
    from seal_hub.hub.sources import resolve_reference

    resolved = resolve_reference(ref, "environment")
    return Environment(resolved.value, source=resolved.source, **options)
