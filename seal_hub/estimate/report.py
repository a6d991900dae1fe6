"""The estimate as a record and as the table `seal-hub estimate` prints.

`estimate_plan` puts the parts of `seal_hub.estimate.parts` together: peak per GPU = persistent parts + the
larger of the two phases (update: one micro-batch's forward, backward and optimizer step, its peak in a
backward or, without gradient accumulation, at its end when all gradients exist; rollout: generation),
and whether that fits the card. `render` lays it out as a fixed-width table whose last line is exactly
``estimate: X.X GB per GPU, fits in Y GB`` or ``estimate: X.X GB per GPU, does not fit in Y GB`` (a contract:
scripts read it). Sizes are in the card's GB: 2^30 bytes (a "24 GB" card holds 24 x 2^30 bytes).

Not covered: a recommendation of settings that would fit (the note under the table names the largest parts).
"""

from __future__ import annotations

from dataclasses import dataclass

from seal_hub.estimate.parts import GB, Part, all_parts
from seal_hub.estimate.plan import TrainingPlan
from seal_hub.estimate.shapes import ModelShape, resolve_shape


@dataclass(frozen=True)
class Estimate:
    """Peak memory per GPU of one training plan, by part."""

    plan: TrainingPlan
    shape: ModelShape
    parts: tuple[Part, ...]

    def phase_bytes(self, phase: str) -> float:
        return sum(p.bytes for p in self.parts if p.phase == phase)

    @property
    def update_bytes(self) -> float:
        """The update's peak: during a backward (its activations and buffers), or at its end (all gradients)."""
        return max(self.phase_bytes("update"), self.phase_bytes("after backward"))

    @property
    def peak_bytes(self) -> float:
        return self.phase_bytes("persistent") + max(self.update_bytes, self.phase_bytes("rollout"))

    @property
    def peak_gb(self) -> float:
        return self.peak_bytes / GB

    @property
    def fits(self) -> bool:
        return round(self.peak_gb, 1) <= self.plan.card_gb

    def summary_line(self) -> str:
        verdict = "fits in" if self.fits else "does not fit in"
        return f"estimate: {self.peak_gb:.1f} GB per GPU, {verdict} {self.plan.card_gb:g} GB"


def estimate_plan(plan: TrainingPlan, shape: ModelShape | None = None) -> Estimate:
    shape = shape or resolve_shape(plan.model, plan.model_revision)
    return Estimate(plan, shape, tuple(all_parts(shape, plan)))


def render(estimate: Estimate) -> str:
    plan, shape = estimate.plan, estimate.shape
    launch = plan.launch
    zero = f", ZeRO-{launch.zero_stage}" if launch.zero_stage else ""
    batches = plan.batch_arithmetic()
    lines = [
        f"config: {plan.config_path}",
        f"model: {plan.model} ({shape.num_params / 1e9:.2f}B params; shape: {shape.source or 'config.json'})",
        f"launch: {launch.num_processes} GPU(s){zero} ({launch.source})",
        f"card: {plan.card_gb:g} GB ({plan.card_source})",
        f"micro-batch: {plan.micro_batch} x {plan.seq_len} tokens ({plan.scored_tokens} scored), "
        f"gradient accumulation {plan.gradient_accumulation_steps}, checkpointing {plan.gradient_checkpointing}; "
        f"{batches['prompts_per_optimizer_step']} prompts per optimizer step, "
        f"{batches['rollouts_per_generation']} rollouts per generation",
        "",
        f"{'part':<32} {'phase':<10} {'GB':>7}  how",
    ]
    for part in estimate.parts:
        phase = "(not used)" if part.phase == "info" else part.phase
        lines.append(f"{part.name:<32} {phase:<10} {part.gb:>7.2f}  {part.note}")
    persistent, rollout = (estimate.phase_bytes(p) / GB for p in ("persistent", "rollout"))
    update = estimate.update_bytes / GB
    lines += [
        "",
        f"{'persistent':<32} {'':<10} {persistent:>7.2f}",
        f"{'update phase':<32} {'':<10} {update:>7.2f}",
        f"{'rollout phase':<32} {'':<10} {rollout:>7.2f}",
        f"{'peak = persistent + max(phases)':<32} {'':<10} {estimate.peak_gb:>7.2f}",
    ]
    if not estimate.fits:
        counted = [p for p in estimate.parts if p.phase != "info"]
        largest = sorted(counted, key=lambda p: p.bytes, reverse=True)[:3]
        lines.append("largest parts: " + ", ".join(f"{p.name} {p.gb:.1f} GB" for p in largest))
    lines.append(estimate.summary_line())
    return "\n".join(lines)
