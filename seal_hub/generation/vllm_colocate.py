"""vLLM behind the same `GenerationBackend` interface, for GPUs (optional dependency, imported on use).

vLLM's automatic prefix caching (`enable_prefix_caching=True`) plays the role of the HF engine's prefix and
per-episode caches: requests carry the whole token sequence and vLLM reuses the KV blocks it already holds,
so the rollout engine is unchanged. Log-probabilities are requested as `processed_logprobs` (after
temperature, top-k and top-p), the distribution the token was sampled from, as with `HFBackend`.

An end-of-turn token that vLLM stopped on but did not return is not invented: the generation is then
reported unfinished and the engine appends the end-of-turn as an environment token (mask 0).

Not covered: weight synchronisation from a trainer (TRL's vLLM integration does that when training).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from seal_hub.generation.backend import Generation, GenerationBackend, GenerationRequest, SamplingConfig

VLLM_INSTALL = (
    'pip install -e ".[vllm]" on a machine with a CUDA GPU; beside the BFCL suites, uv and an override (README, '
    '"GPU installs": pip alone cannot resolve vLLM beside bfcl-eval\'s numpy pin)'
)


class VLLMBackend(GenerationBackend):
    def __init__(self, model: str, eos_token_ids: Iterable[int], seed: int = 0, **llm_kwargs: Any) -> None:
        local = Path(model).expanduser()
        if (local.is_absolute() or model.startswith((".", "~"))) and not local.is_dir():  # a path, not a Hub id
            raise FileNotFoundError(f"vLLM model {model}: no such directory (give a model directory or a Hub id)")
        try:
            from vllm import LLM
        except ImportError as error:
            raise ImportError(f"the vLLM backend needs vllm: {VLLM_INSTALL}") from error
        self.eos_token_ids = sorted({int(i) for i in eos_token_ids})
        llm_kwargs.setdefault("enable_prefix_caching", True)
        llm_kwargs.setdefault("logprobs_mode", "processed_logprobs")
        self.llm = LLM(model=model, seed=seed, **llm_kwargs)

    @classmethod
    def from_llm(cls, llm: Any, eos_token_ids: Iterable[int]) -> VLLMBackend:
        """Wrap an `vllm.LLM` that already exists (TRL's colocated engine, whose weights TRL keeps in sync)."""
        backend = cls.__new__(cls)
        backend.eos_token_ids = sorted({int(i) for i in eos_token_ids})
        backend.llm = llm
        return backend

    def release(self, session: str) -> None:
        """vLLM evicts cached blocks itself."""

    def generate(self, requests: list[GenerationRequest], sampling: SamplingConfig) -> list[Generation]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        prompts = [TokensPrompt(prompt_token_ids=list(r.token_ids)) for r in requests]
        params = [
            SamplingParams(
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                top_k=sampling.top_k or -1,  # vLLM: -1 (or 0 in recent releases) disables top-k
                max_tokens=r.max_new_tokens or sampling.max_new_tokens,
                logprobs=0,
                stop_token_ids=self.eos_token_ids,
                skip_special_tokens=False,
            )
            for r in requests
        ]
        results = []
        for output in self.llm.generate(prompts, params, use_tqdm=False):
            completion = output.outputs[0]
            ids = tuple(completion.token_ids)
            logprobs = tuple(step[token].logprob for step, token in zip(completion.logprobs, ids, strict=True))
            finished = completion.finish_reason == "stop" and bool(ids) and ids[-1] in self.eos_token_ids
            results.append(Generation(ids, logprobs, finished))
        return results
