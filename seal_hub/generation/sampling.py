"""Next-token sampling for the batched backend, through transformers' own logits warpers.

`model.generate(do_sample=True, temperature=t, top_k=k, top_p=p)` builds its sampling distribution with
`TemperatureLogitsWarper`, `TopKLogitsWarper` and `TopPLogitsWarper`, in that order, each only when it changes
something (temperature != 1, top_k != 0, top_p < 1), then draws from the softmax of the warped scores
(transformers 5.23, `GenerationMixin._get_logits_processor`). `logits_processors` builds the same list from a
`SamplingConfig`, so the HF engine (`seal_hub.generation.hf`) samples the distribution `model.generate` samples,
and `generate_kwargs` gives the plain backends (`benchmarks/baselines.py`) the `model.generate` arguments that mean
the same settings. Reusing the warpers (not re-writing them) keeps their edge cases: ties at the top-k
boundary, top-p keeping at least one token, the -inf filter value.

Log-probabilities are those of the warped distribution the token was drawn from (what an importance ratio
against the sampling policy needs); under greedy decoding (temperature 0) they are those of the raw logits
and the token is their argmax, as before.

Not covered: processors that depend on the sequence so far (repetition penalty, no-repeat n-grams) or on
other settings (min-p, typical-p, epsilon/eta cutoffs): the warpers used here read only the scores, which is
why the batched decode loop can pass just the last input token as `input_ids`. `generate_kwargs` turns the
sequence-dependent ones off explicitly, so a checkpoint's generation_config.json (Qwen2.5-Instruct sets
``repetition_penalty=1.05``) cannot make them sample something else.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

from seal_hub.generation.backend import SamplingConfig

# model.generate settings a checkpoint's generation_config may set that the batched backend does not apply:
# the plain backends (benchmarks/baselines.py) pass them explicitly so the backends sample under the same settings.
NEUTRAL_GENERATE_SETTINGS: dict[str, Any] = {
    "repetition_penalty": None,
    "no_repeat_ngram_size": None,
    "min_p": None,
    "typical_p": None,
    "epsilon_cutoff": None,
    "eta_cutoff": None,
    "top_h": None,
}


def logits_processors(sampling: SamplingConfig) -> LogitsProcessorList:
    """The warpers `model.generate` applies for `sampling` (do_sample, one sequence per prompt), in its order.

    Empty under greedy decoding (temperature 0), and when every setting is neutral.
    """
    processors = LogitsProcessorList()
    if sampling.temperature == 0:
        return processors
    if sampling.temperature != 1.0:
        processors.append(TemperatureLogitsWarper(sampling.temperature))
    if sampling.top_k:
        processors.append(TopKLogitsWarper(top_k=sampling.top_k, min_tokens_to_keep=1))
    if sampling.top_p < 1.0:
        processors.append(TopPLogitsWarper(top_p=sampling.top_p, min_tokens_to_keep=1))
    return processors


class Sampler:
    """Draws one token per row from `logits` under one `SamplingConfig`; returns the tokens and their logprobs."""

    def __init__(self, sampling: SamplingConfig, generator: torch.Generator) -> None:
        self.greedy = sampling.temperature == 0
        self.processors = logits_processors(sampling)
        self.generator = generator  # on the logits' device: the draw runs there, without a copy to the host

    def __call__(self, logits: torch.Tensor, input_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """`logits`: ``[rows, vocab]`` (float); `input_ids`: ``[rows, n]``, the rows' latest input tokens."""
        if self.greedy:
            logprobs = torch.log_softmax(logits, dim=-1)
            tokens = logprobs.argmax(dim=-1)
        else:
            logprobs = torch.log_softmax(self.processors(input_ids, logits), dim=-1)
            tokens = torch.multinomial(logprobs.exp(), 1, generator=self.generator).squeeze(-1)
        return tokens, logprobs.gather(-1, tokens[:, None]).squeeze(-1)


def generate_kwargs(sampling: SamplingConfig) -> dict[str, Any]:
    """`model.generate` keyword arguments for the same sampling as `Sampler` (the plain backends')."""
    if sampling.temperature == 0:
        return {"do_sample": False, "temperature": None, "top_p": None, "top_k": None, **NEUTRAL_GENERATE_SETTINGS}
    return {
        "do_sample": True,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "top_k": sampling.top_k,
        **NEUTRAL_GENERATE_SETTINGS,
    }
