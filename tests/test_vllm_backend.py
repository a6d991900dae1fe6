"""The vLLM backend on a GPU (marked `gpu`: deselected by default; needs the vllm extra and CUDA)."""

from __future__ import annotations

import pytest

from seal_hub.generation import SamplingConfig
from seal_hub.rollout import PolicyInfo, RolloutConfig, RolloutEngine

# log-prob agreement of two fp32 engines on one GPU (different attention kernels, same arithmetic precision)
LOGPROB_TOLERANCE = 2e-3


@pytest.mark.gpu
def test_vllm_rollouts_score_like_the_hf_model_on_the_same_gpu_and_dtype(suite, tmp_path):
    """vLLM's greedy multi-turn rollouts, scored again by the HF model on the same GPU in the same dtype (fp32).

    A random tiny model has near-tied logits, so two engines' greedy tokens may part where two tokens tie within
    rounding; the test therefore teacher-forces vLLM's trajectories (prompts, completions, tool results) through
    the HF model: every sampled token's vLLM log-prob equals the HF one within a tolerance, and is HF's top token
    up to that tolerance (greedy). It covers the multi-turn prefix reuse: later turns re-send whole sequences."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from seal_hub.generation.vllm_colocate import VLLMBackend
    from seal_hub.models import build_tiny_model

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    path = build_tiny_model(tmp_path / "tiny")
    tokenizer = AutoTokenizer.from_pretrained(path)
    eos = [tokenizer.eos_token_id]
    config = RolloutConfig(num_generations=2, sampling=SamplingConfig(temperature=0, max_new_tokens=16))
    tasks = suite.select(["multi_turn_base_0", "multi_turn_base_1"])
    backend = VLLMBackend(str(path), eos, dtype="float32", gpu_memory_utilization=0.3)
    trajectories = RolloutEngine(backend, tokenizer, suite, config, PolicyInfo("tiny")).run(tasks)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to("cuda").eval()
    assert any(t.num_steps > 1 for t in trajectories), "some episode takes several model steps"
    for trajectory in trajectories:
        ids = torch.tensor([trajectory.token_ids], device="cuda")
        with torch.no_grad():
            scores = model(input_ids=ids).logits[0].float().log_softmax(dim=-1)
        sampled = [i for i, mask in enumerate(trajectory.token_mask) if mask]
        assert sampled and sampled[0] > 0
        ours = [float(scores[i - 1, trajectory.token_ids[i]]) for i in sampled]
        theirs = [trajectory.logprobs[i] for i in sampled]
        assert theirs == pytest.approx(ours, abs=LOGPROB_TOLERANCE)
        best = [float(scores[i - 1].max()) for i in sampled]
        assert all(o >= b - LOGPROB_TOLERANCE for o, b in zip(ours, best, strict=True)), "greedy: HF's top token"


def test_vllm_backend_without_vllm_says_how_to_install():
    from seal_hub.generation.vllm_colocate import VLLMBackend

    try:
        import vllm  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("vllm is installed here")
    with pytest.raises(ImportError, match=r"needs vllm: pip install -e \"\.\[vllm\]\" on a machine with a CUDA GPU"):
        VLLMBackend("any", [0])


def test_vllm_backend_refuses_a_missing_model_directory_by_name(tmp_path):
    """Checked before vLLM is imported or started, so it holds with or without vllm installed."""
    from seal_hub.generation.vllm_colocate import VLLMBackend

    with pytest.raises(FileNotFoundError, match="vLLM model /nonexistent/model: no such directory"):
        VLLMBackend("/nonexistent/model", [0])
    with pytest.raises(FileNotFoundError, match="no such directory"):
        VLLMBackend(str(tmp_path / "missing"), [0])
