"""The evaluation protocol: the paper's settings for scoring a policy, as one frozen record.

The SEAL paper evaluates with BFCL's own protocol: greedy decoding, the original environment interface (no
learning-interface additions), withheld tools execute when called, and bfcl-eval's step limit (a step past
the limit of a turn still executes, then the episode ends). Its inference loop also ends a turn on model text it
cannot decode. `EvalProtocol` holds these settings with the paper's values as defaults and turns them into the
engine's and the episode's configurations (the suite-neutral `EpisodeSettings`, which every suite reads as far
as it has the budget or rule, and a suite's own config reads as its defaults plus these), so the CLI, the
benchmark and a trainer's periodic evaluation all score the same way; `as_dict()` is what `results.json`
records under ``protocol``.

Not covered: which tasks are scored (the suite's split) or how scores are aggregated (`seal_hub.evaluation.scores`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from seal_hub.config_checks import require_at_least_one
from seal_hub.defaults import EVAL_MAX_NEW_TOKENS, MAX_CONTEXT_TOKENS, MAX_LIVE_EPISODES
from seal_hub.envs.episode import MAX_STEPS_PER_TURN, EpisodeSettings
from seal_hub.generation import SamplingConfig
from seal_hub.rollout import RolloutConfig


@dataclass(frozen=True)
class EvalProtocol:
    max_new_tokens: int = field(
        default=EVAL_MAX_NEW_TOKENS, metadata={"help": "Tokens the model may generate in one step."}
    )
    max_context_tokens: int = field(
        default=MAX_CONTEXT_TOKENS, metadata={"help": "Longest token sequence of one episode."}
    )
    max_steps_per_turn: int = field(
        default=MAX_STEPS_PER_TURN, metadata={"help": "Calling steps per user turn (BFCL: 20)."}
    )
    allow_hidden_tools: bool = field(
        default=True, metadata={"help": "Execute withheld tools when called, as bfcl-eval does (paper: True)."}
    )
    step_limit: str = field(
        default="bfcl", metadata={"help": "Step-limit rule: 'bfcl' (execute, then end) or 'refuse' (training)."}
    )
    end_turn_on_parse_error: bool = field(
        default=True, metadata={"help": "End the turn on text with no decodable call (bfcl-eval's loop)."}
    )
    parser_style: str | None = field(
        default=None,
        metadata={"help": "Tool-call format: hermes, llama3 or pythonic; unset: inferred from the chat template."},
    )
    max_live_episodes: int = field(
        default=MAX_LIVE_EPISODES, metadata={"help": "Episodes generated together in one batch (no effect on scores)."}
    )
    temperature: float = field(default=0.0, metadata={"help": "Sampling temperature; the paper's protocol is 0."})

    def __post_init__(self) -> None:
        require_at_least_one(self, "max_new_tokens", "max_context_tokens", "max_steps_per_turn", "max_live_episodes")
        if self.temperature != 0.0:
            raise ValueError(f"temperature={self.temperature}: evaluation is greedy (0.0); use `seal-hub rollout`")
        self.episode_config()  # validates step_limit with the episode's own message

    def episode_config(self) -> EpisodeSettings:
        return EpisodeSettings(
            max_steps_per_turn=self.max_steps_per_turn,
            allow_hidden_tools=self.allow_hidden_tools,
            step_limit=self.step_limit,
            end_turn_on_parse_error=self.end_turn_on_parse_error,
        )

    def rollout_config(self) -> RolloutConfig:
        return RolloutConfig(
            num_generations=1,
            max_live_episodes=self.max_live_episodes,
            max_context_tokens=self.max_context_tokens,
            parser_style=self.parser_style,
            sampling=SamplingConfig(temperature=0.0, max_new_tokens=self.max_new_tokens),
            episode=self.episode_config(),
        )

    def as_dict(self) -> dict[str, Any]:
        """The settings that decide a score (`max_live_episodes` does not, so it is left out)."""
        settings = asdict(self)
        settings.pop("max_live_episodes")
        return settings
