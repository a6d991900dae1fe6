"""The batched, KV-cached engine on a transformers model, built by `build_hf_backend` (it makes an `HFBackend`).

- `backend.py`: `HFBackend` (a generate call: layout, prefill, the decode loop, sampling) and `build_hf_backend`;
- `cache.py`: each episode's row: its task prefix's KV shared by reference count, its own tail; the prefix store;
- `step.py`: what one forward writes through: a packed prefill of several rows, a call's decode buckets;
- `attention.py`: prefill and decode attention over a shared prefix and a tail, merged by their log-sum-exp.

Outside `seal_hub.generation`, code builds the engine with `build_hf_backend` and drives it as a
`GenerationBackend`; the modules here are its internals. It imports torch and transformers only (the model's end
tokens are read when it is built), so it imports on a bare GPU machine (`benchmarks/gpu_check.py`).
"""

from seal_hub.generation.hf.backend import HFBackend, build_hf_backend

__all__ = ["HFBackend", "build_hf_backend"]
