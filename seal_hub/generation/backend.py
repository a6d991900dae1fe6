"""The one generation protocol: token ids in, sampled token ids and their log-probabilities out.

The rollout engine speaks tokens, not text, so that what the trainer sees is exactly what was sampled. A
backend gets one `GenerationRequest` per live episode (a session key, the episode's whole token sequence so
far, and how long its shared prefix is) and returns one `Generation` each. Caching is the backend's business:
the Hugging Face engine keeps KV caches per session and per shared prefix (`seal_hub.generation.hf`); vLLM's
automatic prefix caching does the same on GPUs (`vllm_colocate.py`, `vllm_server.py`).

Log-probabilities are those of the distribution the token was sampled from (the logits after temperature,
top-k and top-p, as `model.generate` applies them: `sampling.py`), which is what an importance ratio against
the sampling policy needs.

A backend subclasses `GenerationBackend` and inherits its no-op `release` and `finish`: the engine calls
`release` when an episode ends and `finish` when all of a run's episodes have, and a backend overrides only what
it needs (the HF engine's synced mode steps with the other ranks in `finish`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class SamplingConfig:
    temperature: float = field(default=1.0, metadata={"help": "0 means greedy decoding."})
    top_p: float = field(default=1.0, metadata={"help": "Nucleus sampling mass; 1.0 disables it."})
    max_new_tokens: int = field(default=512, metadata={"help": "Tokens one model step may generate."})
    seed: int = field(default=0, metadata={"help": "Seed of the sampler's random generator."})
    top_k: int = field(
        default=0, metadata={"help": "Keep only the k most likely tokens; 0 disables it (TRL's default)."}
    )

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0 disables top-k filtering), got {self.top_k}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")


@dataclass(frozen=True)
class GenerationRequest:
    session: str  # one per episode: lets a backend keep that episode's cache between steps
    token_ids: tuple[int, ...]  # the whole sequence so far (prompt, earlier completions, environment tokens)
    prefix_length: int = 0  # leading tokens shared by every episode of the same task (system + tools + turn 0)
    max_new_tokens: int | None = None  # overrides SamplingConfig.max_new_tokens (e.g. near the context end)


@dataclass(frozen=True)
class Generation:
    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    finished: bool  # ended on an end-of-turn token (False: stopped by the token limit)


class GenerationBackend(Protocol):
    """What the rollout engine needs from an inference engine (subclass it for the no-op defaults)."""

    def generate(self, requests: list[GenerationRequest], sampling: SamplingConfig) -> list[Generation]: ...

    def release(self, session: str) -> None:
        """Forget a finished episode's cache (no-op: a backend that caches nothing per session)."""

    def finish(self) -> None:
        """Every episode of this rank's run has ended (no-op: a backend that need not wait for other ranks)."""
