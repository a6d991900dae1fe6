"""The plain way to generate: one request at a time through `model.generate`, no cache kept between steps.

Every step re-encodes the episode's whole sequence. It is the baseline the rollout benchmark measures the
batched, prefix-cached `HFBackend` against, and the oracle the tests compare its greedy outputs and its sampling
distribution with. Sampling settings are passed explicitly (`sampling.generate_kwargs`), so a checkpoint's
generation_config.json does not add a repetition penalty or top-k of its own.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from seal_hub.rollout.backend import Generation, GenerationRequest, SamplingConfig
from seal_hub.rollout.sampling import generate_kwargs


class SequentialBackend:
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
