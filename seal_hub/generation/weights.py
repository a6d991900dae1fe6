"""How generation takes the policy's weights: LoRA merged into a copy, cast to a generation dtype, put back after.

Generation never updates a weight, so it may run on other tensors than training does, as long as the originals
come back untouched, bit for bit, however the context ends:

- `merged_lora(model)` puts `W + B A * scale` in a new tensor beside each plain LoRA linear layer's weight and marks
  the layer merged, so PEFT's forward runs the base layer alone (not two more products, a dropout and an add per
  layer and token). Unlike PEFT's `merge_adapter` / `unmerge_adapter`, which add and subtract in place, nothing is
  left of the merge afterwards, not even rounding. It costs one copy of every adapted weight while generating, so
  it is on where that is cheap (`SealConfig.merge_lora_for_generation`, unset: on for CPU runs, `merges_by_default`).
- `generation_dtype(model, dtype)` puts a `dtype` copy beside every floating parameter (after the merge, the merged
  weight is the one cast), so the forward, its activations and the KV cache run in `dtype`. A CPU policy trains in
  fp32, and on cores with AMX or AVX512-BF16 oneDNN runs bf16 products faster: `resolve_generation_dtype` picks bf16
  there under "auto", the policy's own dtype elsewhere (docs/benchmarks.md has the measurements). Rollouts drawn
  from bf16 weights are slightly off the fp32 policy the loss scores, as vLLM's are; a run that must sample from the
  trained weights exactly sets `generation_dtype: float32`.

`GenerationWeights` is the one record of both settings, and `backend_for` the one way to generate with them: the
weights applied, the batched HF engine on them (the trainer's rollouts and held-out evaluations, the held-out
comparison and `seal-hub eval` all go through it). Left alone: quantized base layers, weights a sharding engine
partitioned (ZeRO-3, FSDP), LoRA variants (DoRA and others compute more than `B A`), and buffers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from seal_hub.generation.backend import GenerationBackend
    from seal_hub.generation.synced import SyncedSteps


def replaceable(tensor) -> bool:
    """Whether a weight's `.data` may be swapped for a new tensor while generating and put back after: a plain,
    whole, non-empty tensor (not a ZeRO-3 partition, a DTensor shard or a quantized parameter)."""
    return (
        isinstance(tensor, torch.Tensor)
        and tensor.numel() > 0
        and not hasattr(tensor, "ds_id")  # DeepSpeed ZeRO-3's partitioned parameter
        and type(tensor) in (torch.Tensor, torch.nn.Parameter)  # not a DTensor or a quantized parameter
    )


def _mergeable(layer) -> bool:
    from peft.tuners.lora import Linear

    if not isinstance(layer, Linear) or layer.merged or layer.disable_adapters or layer.lora_variant:
        return False
    weight = getattr(layer.get_base_layer(), "weight", None)
    return replaceable(weight) and weight.dtype in (torch.float32, torch.float16, torch.bfloat16)


def merges_by_default(model) -> bool:
    """Whether `seal-hub eval` merges `model`'s LoRA when not told: on a CPU, where the copy is cheap next to the
    time it saves (the module docstring); not on a GPU."""
    return next(model.parameters()).device.type == "cpu"


@contextmanager
def merged_lora(model, enabled: bool = True) -> Iterator[int]:
    """While the context lasts, every plain LoRA linear layer of `model` runs merged (module docstring); yields how
    many layers were merged (0: nothing to merge, or not `enabled`)."""
    if not enabled:
        yield 0
        return
    swapped = []
    try:
        with torch.no_grad():
            for layer in model.modules():
                if not _mergeable(layer):
                    continue
                active = [name for name in layer.active_adapters if name in layer.lora_A]
                if not active:
                    continue
                base = layer.get_base_layer()
                original = base.weight.data
                merged = original.clone()
                for name in active:
                    merged += layer.get_delta_weight(name).to(merged.dtype)
                base.weight.data = merged
                layer.merged_adapters = list(active)
                swapped.append((layer, base, original))
        yield len(swapped)
    finally:
        for layer, base, original in swapped:
            base.weight.data = original
            layer.merged_adapters = []


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
    """How generation takes the policy's weights: LoRA merged into a copy (`merge_lora`, `merged_lora`)
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
def backend_for(
    model,
    tokenizer,
    weights: GenerationWeights = AS_LOADED,
    *,
    seed: int = 0,
    synced: SyncedSteps | None = None,
    factory: Callable[[Any, Any], GenerationBackend] | None = None,
) -> Iterator[tuple[GenerationBackend, torch.dtype | None]]:
    """`model` ready to generate while the context lasts: its weights as `weights` says (put back on leaving, also
    on error) and the backend on them: the batched HF engine (`build_hf_backend`, sampling seeded with `seed`,
    stepping with the other ranks under `synced`), or `factory(model, tokenizer)` when given (a test's double).
    Yields the backend and the dtype the weights were cast to (None: their own)."""
    from seal_hub.generation.hf import build_hf_backend  # here: reading the settings needs no transformers

    with weights.applied(model) as dtype:
        if factory is not None:
            yield factory(model, tokenizer), dtype
        else:
            yield build_hf_backend(model, tokenizer, seed=seed, synced=synced), dtype


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
