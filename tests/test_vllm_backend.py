"""The vLLM backend on a GPU (marked `gpu`: deselected by default; needs `pip install vllm` and CUDA)."""

from __future__ import annotations

import pytest

from seal_hub.rollout import HFBackend, PolicyInfo, RolloutConfig, RolloutEngine, SamplingConfig


@pytest.mark.gpu
def test_vllm_greedy_rollouts_match_the_hf_backend(suite, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from seal_hub.models import build_tiny_model
    from seal_hub.rollout.vllm_backend import VLLMBackend

    path = build_tiny_model(tmp_path / "tiny")
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    eos = [tokenizer.eos_token_id]
    config = RolloutConfig(num_generations=2, sampling=SamplingConfig(temperature=0, max_new_tokens=16))
    tasks = suite.select(["multi_turn_base_0", "multi_turn_base_1"])
    vllm = RolloutEngine(
        VLLMBackend(str(path), eos, gpu_memory_utilization=0.3), tokenizer, suite, config, PolicyInfo("tiny")
    ).run(tasks)
    hf = RolloutEngine(
        HFBackend(model, eos, tokenizer.pad_token_id), tokenizer, suite, config, PolicyInfo("tiny")
    ).run(tasks)
    assert [t.token_ids for t in vllm] == [t.token_ids for t in hf]


def test_vllm_backend_without_vllm_says_how_to_install():
    from seal_hub.rollout.vllm_backend import VLLMBackend

    try:
        import vllm  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("vllm is installed here")
    with pytest.raises(ImportError, match="pip install vllm"):
        VLLMBackend("any", [0])


def test_vllm_backend_refuses_a_missing_model_directory_by_name(tmp_path):
    """Checked before vLLM is imported or started, so it holds with or without vllm installed."""
    from seal_hub.rollout.vllm_backend import VLLMBackend

    with pytest.raises(FileNotFoundError, match="vLLM model /nonexistent/model: no such directory"):
        VLLMBackend("/nonexistent/model", [0])
    with pytest.raises(FileNotFoundError, match="no such directory"):
        VLLMBackend(str(tmp_path / "missing"), [0])
