"""Everything that makes tokens, behind one protocol: `GenerationBackend` (token ids in, sampled ids, log-probs out).

- `backend.py`: the protocol and its records (`GenerationRequest`, `Generation`, `SamplingConfig`).
- `hf/`: the batched, KV-cached engine on a transformers model (`build_hf_backend`, `HFBackend`).
- `vllm_colocate.py`, `vllm_server.py`: vLLM in this process (TRL's colocated engine) or a `vllm serve` over HTTP.
- `sampling.py`: next-token sampling through transformers' own logits warpers; `synced.py`: ranks stepping together.
- `weights.py`: the weights as generation takes them (LoRA merged into a copy, a generation dtype), and
  `backend_for`: those weights applied and the HF engine on them, what training, the held-out comparison and
  `seal-hub eval` generate through.

The names below are imported on first use, so the rollout engine's import of the protocol loads no torch, and the
HF engine imports where the records' dependencies (datasets, pyarrow, pydantic) are not installed, as
`benchmarks/gpu_check.py` needs on a bare GPU machine. This package imports only `seal_hub.models` and the root
modules; the episode loop that drives a backend is `seal_hub.rollout`.
"""

from __future__ import annotations

from seal_hub._lazy import lazy_exports

_LAZY = {
    "Generation": "seal_hub.generation.backend",
    "GenerationBackend": "seal_hub.generation.backend",
    "GenerationRequest": "seal_hub.generation.backend",
    "SamplingConfig": "seal_hub.generation.backend",
    "HFBackend": "seal_hub.generation.hf",
    "build_hf_backend": "seal_hub.generation.hf",
    "AS_LOADED": "seal_hub.generation.weights",
    "GenerationWeights": "seal_hub.generation.weights",
    "backend_for": "seal_hub.generation.weights",
    "merges_by_default": "seal_hub.generation.weights",
    "with_generation_dtype": "seal_hub.generation.weights",
}
__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
