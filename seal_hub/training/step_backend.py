"""The generation backend of a training step or a held-out evaluation: the trainer's current policy, taken as TRL's
own generation takes it, behind `seal_hub.generation`'s `GenerationBackend`.

Without vLLM: TRL's `unwrap_model_for_generation` (ZeRO-3's parameters gathered unless `ds3_gather_for_generation`
is False, gradient checkpointing off) and FSDP v1's full parameters summoned, then `seal_hub.generation.weights.
backend_for`: the weights as `merge_lora_for_generation` and `generation_dtype` say, and a fresh batched HF engine
(cached KV belongs to one step's weights). When parameters stay sharded during generation, the ranks keep their
forward passes in step (`synced_generation`, `seal_hub.generation.synced`).

With vLLM (`use_vllm`): TRL's engine, whose weights TRL syncs before each generation step (`sync_vllm` does it before
a held-out evaluation); nothing is gathered, merged or cast. Colocated, the engine in this process (`VLLMBackend`);
with `vllm_mode: server`, a `vllm serve` that every rank reaches over HTTP (`VLLMServerBackend`), one connection
pool per rank for the whole run: the server's prefix cache outlives a step (TRL resets it after each weight sync).

A `backend_factory` (a test's double, a custom engine) replaces the backend, not the unwrapping around it.

Not covered: the backends themselves (`seal_hub.generation`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from trl.distributed import DistributedBackend
from trl.models import unwrap_model_for_generation

from seal_hub.generation import GenerationBackend
from seal_hub.generation.synced import SyncedSteps, needs_synced_generation
from seal_hub.generation.weights import backend_for
from seal_hub.models.end_tokens import end_token_ids

if TYPE_CHECKING:
    from seal_hub.training.trainer import SealTrainer

BackendFactory = Callable[[Any, Any, int], GenerationBackend]  # (policy, tokenizer, step) -> backend


def synced_steps(accelerator, args) -> SyncedSteps | None:
    """The ranks' lockstep for generation, or None: `synced_generation`, unset: on where parameters stay sharded
    while generating (ZeRO-3 without gathering, FSDP), over more than one process."""
    processes, synced = accelerator.num_processes, args.synced_generation
    if synced is None:
        sharding = DistributedBackend(accelerator)
        gathered = args.ds3_gather_for_generation
        synced = needs_synced_generation(processes, sharding.is_zero3, sharding.is_fsdp, gathered)
    return SyncedSteps(accelerator.device) if synced and processes > 1 else None


class StepBackends:
    """The trainer's backend for each generation step (module docstring)."""

    def __init__(self, trainer: SealTrainer, factory: BackendFactory | None = None) -> None:
        self.trainer = trainer
        self.factory = factory  # None: vLLM under use_vllm, else the batched HF engine
        self.synced = synced_steps(trainer.accelerator, trainer.args)
        self._server: GenerationBackend | None = None  # server mode's client, made on first use

    def sync_vllm(self, step: int) -> None:
        """Under vLLM, the engine's weights made the policy's of `step`, as TRL does before it generates."""
        trainer = self.trainer
        if trainer.use_vllm and step != trainer._last_loaded_step:
            trainer.vllm_generation.sync_weights()
            trainer._last_loaded_step = step

    @contextmanager
    def at(self, step: int) -> Iterator[GenerationBackend]:
        """The backend of generation step `step` (module docstring), sampling seeded with the rank's seed + `step`."""
        trainer, factory = self.trainer, self.factory
        tokenizer, args = trainer.processing_class, trainer.args
        if trainer.use_vllm:
            model = trainer.accelerator.unwrap_model(trainer.model)
            yield (factory or self._vllm)(model, tokenizer, step)
            return
        with (
            unwrap_model_for_generation(
                trainer.model_wrapped,
                trainer.accelerator,
                gather_deepspeed3_params=args.ds3_gather_for_generation,
                gradient_checkpointing_kwargs=args.gradient_checkpointing_kwargs,
            ) as model,
            DistributedBackend(trainer.accelerator).summon_full_params(trainer.model_wrapped, recurse=False),
            backend_for(
                model,
                tokenizer,
                args.generation_weights(),
                seed=trainer.sampling_seed + step,
                synced=self.synced,
                factory=None if factory is None else lambda policy, tokens: factory(policy, tokens, step),
            ) as (backend, _),
        ):
            yield backend

    def _vllm(self, model, tokenizer, step: int) -> GenerationBackend:
        """TRL's vLLM engine: colocated in this process, or the server every rank reaches."""
        eos = end_token_ids(model, tokenizer)
        if self.trainer.vllm_mode != "server":
            from seal_hub.generation.vllm_colocate import VLLMBackend

            return VLLMBackend.from_llm(self.trainer.vllm_generation.llm, eos)
        if self._server is None:
            from seal_hub.generation.vllm_server import VLLMServerBackend, server_url

            args = self.trainer.args
            url = server_url(args.vllm_server_base_url, args.vllm_server_host, args.vllm_server_port)
            self._server = VLLMServerBackend(url, eos)
            self._server.check_context(args.max_context_tokens)
        return self._server
