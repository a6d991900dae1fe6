"""The plain ways to generate that SEAL's batched, prefix-cached `HFBackend` is measured and tested against.

Three `GenerationBackend`s that keep nothing between calls, so every model step re-encodes each episode's whole
sequence:

- `SequentialBackend`: one request at a time through `model.generate`. The baseline of the evaluation and rollout
  benchmarks, and the oracle the tests compare `HFBackend`'s greedy outputs and its sampling distribution with
  (and that the loopback vLLM double, `tests/helpers/vllm_double.py`, generates with);
- `PaddedGenerateBackend`: `model.generate` over one call's requests (one per live episode) left-padded to the
  longest, with their attention mask (the model derives positions from it), greedy or sampled with the same
  warpers (`sampling.generate_kwargs`);
- `ContinuousBatchingBackend`: `model.generate_batch`, transformers' continuous batching (a paged KV cache that
  schedules requests in and out of the batch as they finish); greedy only here, since its sampling draws are its
  own.

The last two are what a user would roll out with instead of `HFBackend`, the anchors of `rollout_throughput.py`:
the same multi-turn requests through the engine a user already has, tokens checked equal first. Under greedy
decoding a padded batch agrees with `HFBackend` up to float rounding (padding changes the matmul shapes), which on
near-tied logits can flip a token: the benchmark compares the tokens and says so instead of timing different work.
Sampling settings are passed explicitly (`sampling.generate_kwargs`), so a checkpoint's generation_config.json does
not add a repetition penalty or top-k of its own.

Benchmark and test code, not the library's: it lives beside the benchmarks (the tests put this folder on their
path, pyproject.toml's ``pythonpath``). Not covered: KV caching of any kind (that is `HFBackend`'s job).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from seal_hub.generation.backend import Generation, GenerationBackend, GenerationRequest, SamplingConfig
from seal_hub.generation.sampling import generate_kwargs


class SequentialBackend(GenerationBackend):
    """One `model.generate` call per request, each on the request's whole sequence; seeded per call."""

    def __init__(self, model, eos_token_ids: Iterable[int], pad_token_id: int = 0, seed: int = 0) -> None:
        self.model = model
        self.eos_token_ids = sorted({int(i) for i in eos_token_ids})
        self.pad_token_id = pad_token_id
        self.seed = seed
        self._calls = 0

    def release(self, session: str) -> None:
        """Nothing is cached."""

    @torch.no_grad()  # not inference_mode: a parameter ZeRO-3 gathers here must stay a normal tensor (TRL: same)
    def generate(self, requests: list[GenerationRequest], sampling: SamplingConfig) -> list[Generation]:
        was_training = self.model.training
        self.model.eval()
        try:
            return [self._one(r, sampling) for r in requests]
        finally:
            self.model.train(was_training)

    def _one(self, request: GenerationRequest, sampling: SamplingConfig) -> Generation:
        device = next(self.model.parameters()).device
        ids = torch.tensor([request.token_ids], device=device)
        self._calls += 1
        torch.manual_seed(self.seed + self._calls)
        out = self.model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=request.max_new_tokens or sampling.max_new_tokens,
            **generate_kwargs(sampling),
            eos_token_id=self.eos_token_ids,
            pad_token_id=self.pad_token_id,
            output_scores=True,
            return_dict_in_generate=True,
        )
        tokens = out.sequences[0, ids.shape[1] :].tolist()
        logprobs = [
            float(torch.log_softmax(score[0].float(), dim=-1)[token])
            for score, token in zip(out.scores, tokens, strict=True)
        ]
        finished = bool(tokens) and tokens[-1] in self.eos_token_ids
        return Generation(tuple(tokens), tuple(logprobs), finished)


class PaddedGenerateBackend(SequentialBackend):
    """One `model.generate` call per engine call, over all its requests left-padded (no cache between calls): the
    reference backend's settings and seeding, its requests batched."""

    @torch.no_grad()
    def generate(self, requests: list[GenerationRequest], sampling: SamplingConfig) -> list[Generation]:
        if not requests:
            return []
        device = next(self.model.parameters()).device
        width = max(len(r.token_ids) for r in requests)
        ids = torch.full((len(requests), width), self.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(requests), width), dtype=torch.long)
        for i, request in enumerate(requests):
            ids[i, width - len(request.token_ids) :] = torch.tensor(request.token_ids)
            mask[i, width - len(request.token_ids) :] = 1
        limits = [r.max_new_tokens or sampling.max_new_tokens for r in requests]
        self._calls += 1
        torch.manual_seed(self.seed + self._calls)
        was_training = self.model.training
        self.model.eval()
        try:
            out = self.model.generate(
                ids.to(device),
                attention_mask=mask.to(device),
                max_new_tokens=max(limits),
                **generate_kwargs(sampling),
                eos_token_id=self.eos_token_ids,
                pad_token_id=self.pad_token_id,
                output_scores=True,
                return_dict_in_generate=True,
            )
        finally:
            self.model.train(was_training)
        new = out.sequences[:, width:].tolist()
        scores = torch.stack(out.scores, dim=1).float().log_softmax(dim=-1) if out.scores else None
        generations = []
        for i, (tokens, limit) in enumerate(zip(new, limits, strict=True)):
            tokens = _cut(tokens, self.eos_token_ids, limit)
            logprobs = [float(scores[i, t, token]) for t, token in enumerate(tokens)] if scores is not None else []
            generations.append(
                Generation(tuple(tokens), tuple(logprobs), bool(tokens) and tokens[-1] in self.eos_token_ids)
            )
        return generations


class ContinuousBatchingBackend(GenerationBackend):
    """One `model.generate_batch` call (transformers' continuous batching) per engine call; greedy decoding only."""

    def __init__(self, model, eos_token_ids: Iterable[int], pad_token_id: int = 0) -> None:
        self.model = model
        self.eos_token_ids = sorted({int(i) for i in eos_token_ids})
        self.pad_token_id = pad_token_id

    def release(self, session: str) -> None:
        """Nothing is cached between calls."""

    @torch.no_grad()
    def generate(self, requests: list[GenerationRequest], sampling: SamplingConfig) -> list[Generation]:
        from transformers import GenerationConfig

        if sampling.temperature != 0:
            raise ValueError("ContinuousBatchingBackend runs greedy decoding only (temperature 0)")
        if not requests:
            return []
        limits = [r.max_new_tokens or sampling.max_new_tokens for r in requests]
        config = GenerationConfig(
            max_new_tokens=max(limits),
            do_sample=False,
            eos_token_id=self.eos_token_ids,
            pad_token_id=self.pad_token_id,
        )
        outputs = self.model.generate_batch(
            inputs=[list(r.token_ids) for r in requests], generation_config=config, progress_bar=False
        )
        results = list(outputs.values())
        if len(results) != len(requests) or any(r.error for r in results):
            errors = "; ".join(str(r.error) for r in results if r.error) or f"{len(results)} of {len(requests)} back"
            raise RuntimeError(f"transformers generate_batch failed: {errors}")
        generations = []
        for result, limit in zip(results, limits, strict=True):
            tokens = _cut(list(result.generated_tokens), self.eos_token_ids, limit)
            logprobs = tuple(result.logprobs[: len(tokens)]) if len(result.logprobs) >= len(tokens) else ()
            generations.append(Generation(tuple(tokens), logprobs, bool(tokens) and tokens[-1] in self.eos_token_ids))
        return generations


def _cut(tokens: list[int], eos: list[int], limit: int) -> list[int]:
    """A row's tokens up to its first end-of-turn token (kept) and its own limit; padding after the end dropped."""
    for i, token in enumerate(tokens[:limit]):
        if token in eos:
            return tokens[: i + 1]
    return tokens[:limit]
