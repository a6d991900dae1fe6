"""transformers' own batched generation as a `GenerationBackend` (the rollout benchmark's anchors): the same
greedy tokens as the batched backend on multi-turn episodes, each row cut at its own end token and limit."""

from __future__ import annotations

import pytest
from baselines import ContinuousBatchingBackend, PaddedGenerateBackend, _cut

from seal_hub.generation.backend import GenerationRequest, SamplingConfig
from seal_hub.generation.hf import HFBackend
from seal_hub.rollout.engine import PolicyInfo, RolloutConfig, RolloutEngine

TASKS = ["multi_turn_base_0", "multi_turn_miss_func_0"]
GREEDY = SamplingConfig(temperature=0, max_new_tokens=10)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from seal_hub.models.tiny import build_tiny_model

    path = build_tiny_model(tmp_path_factory.mktemp("tiny"))
    return AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)


def rollouts(backend, tokenizer, suite):
    config = RolloutConfig(num_generations=2, max_live_episodes=4, sampling=GREEDY)
    return RolloutEngine(backend, tokenizer, suite, config, PolicyInfo("tiny")).run(suite.select(TASKS))


def test_padded_generate_gives_the_batched_backends_tokens_on_multi_turn_episodes(suite, tiny):
    model, tokenizer = tiny
    eos = [tokenizer.eos_token_id]
    ours = rollouts(HFBackend(model, eos, tokenizer.pad_token_id), tokenizer, suite)
    theirs = rollouts(PaddedGenerateBackend(model, eos, tokenizer.pad_token_id), tokenizer, suite)
    assert sum(t.num_steps for t in ours) > len(ours), "episodes take several model steps"
    for a, b in zip(ours, theirs, strict=True):
        assert a.token_ids == b.token_ids
        # the log-probs of the same greedy tokens, from a padded batch instead of one row
        assert a.token_mask == b.token_mask
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)


def test_padded_generate_cuts_each_row_at_its_own_end_and_limit(tiny):
    model, tokenizer = tiny
    requests = [GenerationRequest("a", (5, 6, 7, 8, 9), max_new_tokens=3), GenerationRequest("b", (5, 6))]
    out = PaddedGenerateBackend(model, [tokenizer.eos_token_id], tokenizer.pad_token_id).generate(requests, GREEDY)
    assert len(out[0].token_ids) == 3 and len(out[0].logprobs) == 3 and not out[0].finished
    assert 1 <= len(out[1].token_ids) <= 10
    assert _cut([4, 2, 0, 0], [2], 10) == [4, 2]  # padding after the end token is dropped
    assert _cut([4, 5, 6], [2], 2) == [4, 5]


def test_continuous_batching_refuses_sampling(tiny):
    model, tokenizer = tiny
    backend = ContinuousBatchingBackend(model, [tokenizer.eos_token_id], tokenizer.pad_token_id)
    with pytest.raises(ValueError, match="greedy"):
        backend.generate([GenerationRequest("a", (5, 6))], SamplingConfig(temperature=1.0))


@pytest.mark.slow  # transformers' continuous batching takes minutes on a CPU
def test_continuous_batching_gives_the_batched_backends_tokens(suite, tiny):
    model, tokenizer = tiny
    eos = [tokenizer.eos_token_id]
    ours = rollouts(HFBackend(model, eos, tokenizer.pad_token_id), tokenizer, suite)
    theirs = rollouts(ContinuousBatchingBackend(model, eos, tokenizer.pad_token_id), tokenizer, suite)
    assert [t.token_ids for t in ours] == [t.token_ids for t in theirs]
