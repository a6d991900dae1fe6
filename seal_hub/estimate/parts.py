"""The parts of a GRPO training process's memory per GPU, each from a formula over the model shape and the plan.

A SEAL step has two phases that never overlap on one GPU: the rollout (generation, KV cache) and the update
(forward, backward and optimizer step of each micro-batch). What lives through both is *persistent*: weights
(and the reference model of a full fine-tune with a KL term), trainable parameters and optimizer state, vLLM's
share of the card when it generates colocated. The peak is persistent + the larger phase.

Design choice: every part is counted from what the libraries do (TRL 1.16, PEFT 0.21, transformers 5, torch 2.13,
bitsandbytes, DeepSpeed); each function below gives the facts its formula rests on (`weights`, `trainable`,
`activations`, `logprob_head`, `rollout`), and each part says its formula in its note.

Not covered: the CUDA context and allocator fragmentation (a fixed `RUNTIME_OVERHEAD_GB` on GPU plans), the
no-grad old/reference log-prob passes (smaller than the update's), attention without SDPA (eager builds
``[B, heads, S, S]`` scores), activation offloading.
"""

from __future__ import annotations

from dataclasses import dataclass

from seal_hub.estimate.plan import TrainingPlan
from seal_hub.estimate.shapes import ModelShape

GB = 2**30  # a card's "24 GB" are 24 x 2^30 bytes (what nvidia-smi and torch report)
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "auto": 2}
# PEFT's targets when lora_target_modules is unset, for Llama/Qwen2 (peft.utils.constants)
DEFAULT_LORA_TARGETS = ("q_proj", "v_proj")
# TRL 1.16 trl/kernels/chunked_logprob.py: tokens per projection tile and trl/trainer/utils.py: vocabulary columns
LOGPROB_TOKEN_TILE = 4096
LOGPROB_VOCAB_TILE = 32768
# fp32 copies of a tile the torch fallback (no Triton: CPU) holds at once: its backward (`_backward_tile`) keeps
# the scaled logits twice, log p, p, the gradient, and two temporaries of the target term
CPU_TILE_TEMPORARIES = 7
# HFBackend's default prefix store (seal_hub.generation.hf)
PREFIX_STORE_BYTES = 512 * 2**20
# DeepSpeed 0.19.8's default stage3_param_persistence_threshold (deepspeed.runtime.zero.config), which the shipped
# accelerate configs leave (they name no deepspeed_config_file, so accelerate sets no "auto" for it)
ZERO3_PERSISTENCE_THRESHOLD = 100_000
RUNTIME_OVERHEAD_GB = 1.0  # CUDA context, cuBLAS workspaces, allocator fragmentation
# bitsandbytes 4-bit: blocks of 64 weights; nested quantisation: 8-bit absmax, fp32 constants per 256 blocks
QUANT_BLOCK = 64
NESTED_BLOCK = 256


@dataclass(frozen=True)
class Part:
    """One line of the estimate: bytes per GPU, the phase it lives in, and how it was counted."""

    name: str
    bytes: float
    phase: str  # "persistent", "update", "after backward", "rollout", or "info" (shown, not summed)
    note: str = ""

    @property
    def gb(self) -> float:
        return self.bytes / GB


def weight_bytes_per_param(plan: TrainingPlan) -> float:
    return DTYPE_BYTES.get(plan.dtype, 4)


def compute_bytes(plan: TrainingPlan) -> int:
    """Bytes of an activation: the compute dtype (bf16 autocast, a bf16/fp16 model, or 4-bit's bf16 compute)."""
    if plan.bf16 or plan.load_in_4bit or plan.load_in_8bit or DTYPE_BYTES.get(plan.dtype, 4) == 2:
        return 2
    return 4


def quantized_bytes_per_weight(nested: bool) -> float:
    constants = (1 / QUANT_BLOCK + 4 / (QUANT_BLOCK * NESTED_BLOCK)) if nested else 4 / QUANT_BLOCK
    return 0.5 + constants


def lora_params(shape: ModelShape, plan: TrainingPlan) -> int:
    targets = plan.lora_target_modules or DEFAULT_LORA_TARGETS
    linears = shape.linear_shapes()
    unknown = [t for t in targets if t not in linears]
    if unknown and targets != ("all-linear",):
        known = ", ".join(linears)
        raise ValueError(f"lora_target_modules {unknown} are not projections of a decoder layer ({known})")
    chosen = linears.values() if targets == ("all-linear",) else [linears[t] for t in targets]
    return shape.num_layers * sum(plan.lora_r * (a + b) for a, b in chosen)


def lora_bytes(plan: TrainingPlan) -> int:
    """Adapter dtype: TRL casts it to bf16 on a quantised base (QLoRA), keeps the model's under ZeRO-3, else
    PEFT's fp32."""
    if plan.load_in_4bit or plan.load_in_8bit:
        return 2
    if plan.launch.zero_stage == 3:
        return DTYPE_BYTES.get(plan.dtype, 4)
    return 4


def weights(shape: ModelShape, plan: TrainingPlan) -> list[Part]:
    """The model's weights: parameters x dtype bytes. 4-bit (bitsandbytes NF4/FP4) stores each projection weight
    in half a byte plus its quantisation constants (one fp32 absmax per 64 weights, or with nested quantisation one
    byte per 64 and one fp32 per 256 blocks); embeddings, head, norms and biases stay in the compute dtype."""
    wb = weight_bytes_per_param(plan)
    shard = plan.launch.num_processes if plan.launch.zero_stage == 3 else 1
    if plan.load_in_4bit:
        quantized = shape.num_layers * shape.layer_linear_params
        rest = shape.num_params - quantized
        total = quantized * quantized_bytes_per_weight(plan.nested_quant) + rest * wb
        note = f"{quantized / 1e9:.2f}B 4-bit + {rest / 1e9:.2f}B (embeddings, head, norms) in {plan.dtype}"
    elif plan.load_in_8bit:
        quantized = shape.num_layers * shape.layer_linear_params
        rest = shape.num_params - quantized
        total = quantized + rest * wb
        note = f"{quantized / 1e9:.2f}B 8-bit + {rest / 1e9:.2f}B in {plan.dtype}"
    else:
        total = shape.num_params * wb
        note = f"{shape.num_params / 1e9:.2f}B params x {wb} B ({plan.dtype})"
    if shard > 1:
        note += f", ZeRO-3 shard 1/{shard}"
    parts = [Part("weights", total / shard, "persistent", note)]
    if plan.full_finetune and plan.beta != 0.0:
        ref_note = "full fine-tune with beta > 0: a frozen copy"
        parts.append(Part("reference model", total / shard, "persistent", ref_note))
    if shard > 1:
        kept, note = zero3_persistent(shape, plan)
        parts.append(Part("ZeRO-3 persistent params", kept, "persistent", note))
        biggest = max(shape.embedding_params, shape.head_params, shape.layer_linear_params + shape.layer_other_params)
        parts.append(Part("ZeRO-3 gathered params", 2 * biggest * wb, "update", "two gathered layers (or the head)"))
    return parts


def zero3_persistent(shape: ModelShape, plan: TrainingPlan) -> tuple[float, str]:
    """Bytes of the parameters ZeRO-3 keeps whole on every rank (at most `ZERO3_PERSISTENCE_THRESHOLD` elements
    each: DeepSpeed gathers them once and never releases them), and how they were counted."""
    small = lambda n: n if n <= ZERO3_PERSISTENCE_THRESHOLD else 0  # noqa: E731
    linears = shape.linear_shapes()
    layer = 2 * shape.hidden_size + (small(shape.q_dim) + 2 * small(shape.kv_dim) if shape.qkv_bias else 0)
    if not (plan.load_in_4bit or plan.load_in_8bit):  # quantised projections: not covered, counted as large
        layer += sum(small(a * b) for a, b in linears.values())
    base = shape.num_layers * layer + shape.hidden_size + small(shape.embedding_params) + small(shape.head_params)
    total, note = base * weight_bytes_per_param(plan), f"{base / 1e6:.2f}M base params"
    if plan.use_peft:
        targets = plan.lora_target_modules or DEFAULT_LORA_TARGETS
        chosen = linears.values() if targets == ("all-linear",) else [linears[t] for t in targets if t in linears]
        adapter = shape.num_layers * sum(small(plan.lora_r * a) + small(plan.lora_r * b) for a, b in chosen)
        total += adapter * lora_bytes(plan)
        note += f" + {adapter / 1e6:.2f}M LoRA"
    return total, f"{note} of <= {ZERO3_PERSISTENCE_THRESHOLD:,} elements each, whole on every rank"


def trainable(shape: ModelShape, plan: TrainingPlan) -> list[Part]:
    """Trainable parameters (LoRA's; a full fine-tune's are the weights), their gradients, optimizer state.

    LoRA: r x (in + out) per targeted projection per layer, in fp32 (PEFT's ``autocast_adapter_dtype``), except on
    a quantised base (TRL casts them to bf16, as QLoRA does) and under ZeRO-3 (the model dtype). Gradients in their
    dtype, AdamW's two moments in the parameter's dtype (torch); DeepSpeed adds fp32 master weights and fp32 moments
    (16 bytes per parameter for bf16, sharded by stage: 1 optimizer state, 2 + gradients, 3 + parameters, LoRA's
    included; what ZeRO-3 keeps whole on every rank: `zero3_persistent`)."""
    world, stage = plan.launch.num_processes, plan.launch.zero_stage
    if plan.use_peft:
        count, pb = lora_params(shape, plan), lora_bytes(plan)
        what = f"LoRA r={plan.lora_r}: {count / 1e6:.1f}M params x {pb} B"
        shard = world if stage == 3 else 1  # ZeRO-3 partitions the adapter too (its persistent copies: weights())
        note = what + (f", ZeRO-3 shard 1/{shard}" if shard > 1 else "")
        parts = [Part("LoRA parameters", count * pb / shard, "persistent", note)]
    else:
        count, pb = shape.num_params, weight_bytes_per_param(plan)
        what = f"{count / 1e9:.2f}B params"
        parts = []
    # with accumulation, the gradients of earlier micro-batches live through the next one's backward; without,
    # they only all exist at its end, when the activations are gone ("after backward")
    grad_phase = "update" if plan.gradient_accumulation_steps > 1 else "after backward"
    if stage >= 1:  # DeepSpeed: fp32 master + two fp32 moments, sharded; gradients in the compute dtype
        grad_shard = world if stage >= 2 else 1
        parts.append(Part("gradients", count * pb / grad_shard, grad_phase, f"{what}, shard 1/{grad_shard}"))
        state_note = f"fp32 master + AdamW moments, ZeRO shard 1/{world}"
        parts.append(Part("optimizer state", count * 12 / world, "persistent", state_note))
    else:
        parts.append(Part("gradients", count * pb, grad_phase, what))
        parts.append(Part("optimizer state", 2 * count * pb, "persistent", f"AdamW moments: 2 x {what}"))
    return parts


def layer_activation_bytes(shape: ModelShape, plan: TrainingPlan) -> float:
    """Bytes autograd keeps per token for one decoder layer's backward (SDPA, padded batch: k/v repeated)."""
    b = compute_bytes(plan)
    h, q, i = shape.hidden_size, shape.q_dim, shape.intermediate_size
    # RMSNorm: its fp32 input (the input itself in fp32), the normalised value when its weight trains (kept by
    # the weight multiply), and its output (kept by the projections it feeds)
    norm = 4 * h + (b * h if plan.full_finetune else 0) + b * h
    attention = 4 * b * q  # rotated q, repeated k and v, SDPA's output (o_proj's input is a view of it)
    mlp = 4 * b * i  # gate, up, silu(gate), silu(gate) * up
    total = 2 * norm + attention + mlp
    if plan.use_peft:
        lb = lora_bytes(plan)
        cast = lb != b  # the adapter's dtype differs: PEFT casts the input to it (autocast casts it back)
        saved_in = b if plan.bf16 else lb
        for name in plan.lora_target_modules or DEFAULT_LORA_TARGETS:
            d_in = shape.linear_shapes().get(name, (h, h))[0]
            if plan.lora_dropout > 0:
                total += d_in * (1 + saved_in)  # dropout mask and the dropped input lora_A keeps
            elif cast:
                total += d_in * saved_in  # the cast input lora_A keeps
            total += plan.lora_r * (saved_in + lb)  # lora_A's output, kept by lora_B
    return total


def activations(shape: ModelShape, plan: TrainingPlan) -> list[Part]:
    """What autograd saves for one micro-batch, and the attention mask.

    Per token per layer of a Llama/Qwen2 decoder with SDPA, counted tensor by tensor (`layer_activation_bytes`);
    with gradient checkpointing, each layer's input plus one layer recomputed. GRPO batches are padded, so
    transformers passes SDPA a boolean ``[B, 1, S, S]`` mask and torch turns it into a float bias of the query dtype
    on every attention call, which the backward keeps."""
    b = compute_bytes(plan)
    tokens = plan.micro_batch * plan.seq_len
    per_layer = layer_activation_bytes(shape, plan)
    full = tokens * per_layer * shape.num_layers
    backward = tokens * (2 * shape.intermediate_size + 2 * shape.hidden_size) * b  # one layer's input gradients
    inputs = tokens * shape.hidden_size * b * (shape.num_layers + 1)  # layer inputs + final norm input
    checkpointed = inputs + tokens * per_layer + backward
    mask_bool = plan.micro_batch * plan.seq_len**2
    bias = mask_bool * b
    kb = per_layer / 1024
    head = f"{plan.micro_batch} x {plan.seq_len} tokens"
    parts = [
        Part(
            "activations, checkpointed",
            checkpointed,
            "update" if plan.gradient_checkpointing else "info",
            f"{head}: layer inputs + one layer recomputed ({kb:.0f} KB/token/layer)",
        ),
        Part(
            "activations, no checkpointing",
            full + backward,
            "info" if plan.gradient_checkpointing else "update",
            f"{head} x {shape.num_layers} layers x {kb:.0f} KB/token",
        ),
    ]
    layers_kept = 1 if plan.gradient_checkpointing else shape.num_layers
    parts.append(
        Part(
            "attention mask",
            mask_bool + bias * (layers_kept + 1),
            "update",
            f"bool [B,1,S,S] + float bias per SDPA call kept for {layers_kept} layer(s)",
        )
    )
    return parts


def logprob_head(shape: ModelShape, plan: TrainingPlan) -> list[Part]:
    """TRL 1.16's fused, tiled log-prob head over the scored positions of one micro-batch.

    The fused head (`trl.trainer.utils.add_fused_lm_head`, kernel `trl.kernels.chunked_logprob`) never builds
    ``[tokens, vocab]`` logits: it projects tiles of at most 4,096 tokens x 32,768 vocabulary columns and keeps
    per-token fp32 statistics, so its memory is the tile, the scored hidden states, fp32 gradient buffers of the
    hidden states (and of the head when it trains), and, without Triton (CPU), a few fp32 temporaries of the tile."""
    b = 4 if plan.cast_lm_head_to_fp32 else compute_bytes(plan)
    cpu = plan.use_cpu
    per_seq = plan.seq_len - 1 if cpu else plan.scored_tokens  # without Triton every position is projected
    n = plan.micro_batch * per_seq
    rows, cols = min(n, LOGPROB_TOKEN_TILE), LOGPROB_VOCAB_TILE
    tile = rows * cols * b  # allocated whole on a GPU, even when the vocabulary is narrower
    if cpu:  # on a CPU only the pages a vocabulary narrower than the tile writes become resident
        used = rows * min(cols, shape.vocab_size)
        tile = used * b + CPU_TILE_TEMPORARIES * used * 4
    hidden = n * shape.hidden_size * (b + 4 + b)  # scored hidden states, fp32 gradient buffer, its cast
    per_token = n * 4 * 12  # fp32 statistics, log-probs, entropy, and GRPO's per-token loss terms
    head_grad = 0.0
    if plan.full_finetune:
        head_grad = shape.vocab_size * shape.hidden_size * (4 + weight_bytes_per_param(plan))
    note = f"{n} scored tokens, tile {rows} x {cols}" + (" + fp32 head gradient" if head_grad else "")
    return [Part("log-prob head (fused)", tile + hidden + per_token + head_grad, "update", note)]


def rollout(shape: ModelShape, plan: TrainingPlan) -> list[Part]:
    """The batched engine's KV rows (``max_live_episodes x max_context_tokens x`` KV bytes per token) plus its
    prefix store, or vLLM's fraction of the card (``vllm_gpu_memory_utilization``); nothing with ``vllm_mode:
    server`` (generation runs on the server's GPUs, which the estimate does not cover)."""
    if plan.use_vllm and plan.vllm_server:
        return []  # generated on the server's GPUs, not the training GPUs
    if plan.use_vllm:
        share = plan.vllm_gpu_memory_utilization * plan.card_gb * GB
        phase = "rollout" if plan.vllm_sleep else "persistent"
        return [Part("vLLM share", share, phase, f"vllm_gpu_memory_utilization {plan.vllm_gpu_memory_utilization}")]
    b = compute_bytes(plan)
    kv = plan.max_live_episodes * plan.max_context_tokens * shape.kv_values_per_token * b
    logits = plan.max_live_episodes * shape.vocab_size * 4 * 2
    note = f"{plan.max_live_episodes} episodes x {plan.max_context_tokens} tokens x {shape.kv_values_per_token * b} B"
    return [
        Part("rollout KV cache", kv, "rollout", note),
        Part("rollout prefix store + logits", PREFIX_STORE_BYTES + logits, "rollout", "HFBackend's store, logits"),
    ]


def all_parts(shape: ModelShape, plan: TrainingPlan) -> list[Part]:
    parts = [
        *weights(shape, plan),
        *trainable(shape, plan),
        *activations(shape, plan),
        *logprob_head(shape, plan),
        *rollout(shape, plan),
    ]
    if not plan.use_cpu:
        parts.append(Part("CUDA context + fragmentation", RUNTIME_OVERHEAD_GB * GB, "persistent", "fixed allowance"))
    return parts
