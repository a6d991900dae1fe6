"""Generate in bf16 on a CPU that has bf16 instructions, train in fp32: the weights cast for generation only.

A CPU policy trains in fp32 (`SealConfig` refuses bf16 mixed precision without a GPU, and small updates to bf16
weights round away). Generation never updates a weight, and on a CPU with AVX512-BF16 or AMX, oneDNN runs bf16
matrix products faster than fp32 ones while every weight and KV position moves half the bytes.
`generation_dtype(model, dtype)` puts a `dtype` copy beside every floating parameter while the context lasts (after
`merged_lora`, the merged weight is the one cast), so the forward, its activations and the KV cache run in `dtype`;
on leaving, every parameter gets its original tensor back untouched, bit for bit, as `merged_lora` does.

`GenerationWeights` is the one record of how generation takes the weights (LoRA merged, the dtype), which the
trainer's rollouts, the held-out evaluations and `seal-hub eval` apply. `resolve_generation_dtype` says which
dtype a run generates in: what the user set (`SealConfig.generation_dtype`, `--generation_dtype`), or with "auto"
bf16 where it was measured to pay: a CPU run of an fp32 policy on cores whose /proc/cpuinfo lists `amx_bf16` or
`avx512_bf16` (`benchmarks/cpu_dtype.py` measures the time and how many greedy held-out answers agree with fp32;
docs/benchmarks.md has the figures). Elsewhere the policy's own dtype: without those instructions PyTorch converts
bf16 in software and it is slower, and a GPU policy is already in the dtype it was loaded in.

Measured on the demo's policy, 50 held-out bfcl-single tasks, 2 cores with AMX: the evaluation in 0.58x the fp32
time, the same verdict on all 50 tasks (the same tokens on 13: bf16 words some answers differently). Rollouts drawn
from the bf16 weights are slightly off the fp32 policy the loss scores, as vLLM's are; TRL corrects that only for
vLLM (`vllm_importance_sampling_correction`), and a run that must sample from the trained weights exactly sets
`generation_dtype: float32`.

What it costs: one copy of the weights in `dtype` while generating (the demo: 0.27 GB). Left alone: quantized and
sharded parameters (as `merged_lora` leaves them) and buffers (rotary frequencies are computed in fp32 anyway).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import torch

from seal_hub.models.merged import merged_lora, replaceable

CHOICES = ("auto", "float32", "bfloat16")
BF16_FLAGS = ("amx_bf16", "avx512_bf16")


@cache
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags as /proc/cpuinfo lists them (empty where there is no /proc/cpuinfo)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    line = next((line for line in text.splitlines() if line.startswith("flags")), "")
    return frozenset(line.partition(":")[2].split())


def cpu_has_bf16() -> bool:
    """Whether this CPU runs bf16 matrix products in hardware (AMX or AVX512-BF16)."""
    return any(flag in cpu_flags() for flag in BF16_FLAGS)


def check_generation_dtype(setting: str | None) -> str:
    """`setting` (None: "auto"), refused with the choices when it is not one of them."""
    setting = setting or "auto"
    if setting not in CHOICES:
        raise ValueError(f"generation_dtype must be one of {', '.join(CHOICES)}, got {setting!r}")
    return setting


def resolve_generation_dtype(setting: str | None, model) -> torch.dtype | None:
    """The dtype to generate in, or None for the policy's own (module docstring). `setting`: one of `CHOICES`."""
    setting = check_generation_dtype(setting)
    parameter = next(model.parameters(), None)
    if parameter is None:
        return None
    if setting != "auto":
        wanted = getattr(torch, setting)
        return None if wanted == parameter.dtype else wanted
    on_cpu = parameter.device.type == "cpu"
    return torch.bfloat16 if on_cpu and parameter.dtype == torch.float32 and cpu_has_bf16() else None


def with_generation_dtype(record: dict, dtype: torch.dtype | None) -> dict:
    """An evaluation's model record naming the dtype the model generated in, when it was cast to one (a resumed
    evaluation must generate the same way, and a reader must know the answers came from bf16)."""
    return record if dtype is None else record | {"generation_dtype": str(dtype).removeprefix("torch.")}


@dataclass(frozen=True)
class GenerationWeights:
    """How generation takes the policy's weights: LoRA merged into a copy (`merge_lora`, `seal_hub.models.merged`)
    and cast to `dtype` (a `CHOICES` setting; None: the policy's own dtype, nothing cast)."""

    merge_lora: bool = False
    dtype: str | None = None

    def __post_init__(self) -> None:
        if self.dtype is not None:
            check_generation_dtype(self.dtype)

    def resolve(self, model) -> torch.dtype | None:
        """The dtype `model` generates in under these settings, None for its own."""
        return None if self.dtype is None else resolve_generation_dtype(self.dtype, model)

    @contextmanager
    def applied(self, model) -> Iterator[torch.dtype | None]:
        """While the context lasts, `model` holds its weights as generation takes them; yields the dtype cast to
        (None: none). Everything is put back on leaving, also on error."""
        dtype = self.resolve(model)
        with merged_lora(model, enabled=self.merge_lora), generation_dtype(model, dtype):
            yield dtype


AS_LOADED = GenerationWeights()  # nothing merged, nothing cast


@contextmanager
def generation_dtype(model, dtype: torch.dtype | None) -> Iterator[int]:
    """While the context lasts, every floating parameter of `model` holds a `dtype` copy (module docstring);
    yields how many were cast (0 with `dtype` None or already the parameters' dtype)."""
    swapped = []
    try:
        if dtype is not None:
            with torch.no_grad():
                for parameter in model.parameters():  # a tied weight is listed (and cast) once
                    if replaceable(parameter) and parameter.is_floating_point() and parameter.dtype != dtype:
                        original = parameter.data
                        parameter.data = original.to(dtype)
                        swapped.append((parameter, original))
        yield len(swapped)
    finally:
        for parameter, original in swapped:
            parameter.data = original
