"""Small, real artifacts for the hub tests: trajectories with diagnoses, interface snapshots, LoRA adapters."""

from __future__ import annotations

from pathlib import Path

from helpers.profiles import PROFILE
from seal_hub.diagnosis import Label, RolloutDiagnosis
from seal_hub.diagnosis.records import diagnosis_rows
from seal_hub.interface import InterfaceSnapshot
from seal_hub.interface.evolve import evolve
from seal_hub.rollout.records import MessageRecord, Trajectory, TurnRecord, VerdictRecord


def trajectories(iteration: int, count: int = 4, interface_version: str = "v0") -> list[Trajectory]:
    """`count` rollouts of iteration `iteration`: rollout i passes when i is even."""
    out = []
    for i in range(count):
        passed = i % 2 == 0
        out.append(
            Trajectory(
                task_id=f"multi_turn_base_{iteration}_{i}",
                category="base",
                rollout_index=i,
                seed=iteration,
                policy_id="tiny",
                interface_version=interface_version,
                messages=[MessageRecord(role="user", content=f"iteration {iteration}, task {i}")],
                turns=[TurnRecord(index=0, verdict=VerdictRecord(passed=passed, expects_calls=True, model_calls=1))],
                reward=1.0 if passed else 0.0,
                passed=passed,
                prompt_length=5,
                token_ids=[1, 2, 3],
                token_mask=[0, 1, 1],
                logprobs=[0.0, -0.5, -0.25],
                num_steps=1,
                num_generated_tokens=2,
                generation_seconds=0.1,
                environment_seconds=0.01,
                total_seconds=0.11,
            )
        )
    return out


def diagnoses(rollouts: list[Trajectory]) -> list[dict]:
    labelled = [
        RolloutDiagnosis(t.task_id, t.reward, (Label.PASS if t.passed else Label.MISSING_TOOL_CALL,)) for t in rollouts
    ]
    return diagnosis_rows(rollouts, labelled)


def snapshots() -> list[InterfaceSnapshot]:
    """v0 (null), v1 evolved from a failure profile, v2 with a different rho."""
    v0 = InterfaceSnapshot.null()
    v1 = evolve(v0, PROFILE)
    rho = dict(v1.rho) | {Label.SPURIOUS_TOOL_CALL: 1.5}
    v2 = InterfaceSnapshot.model_validate(
        v1.model_dump() | {"version": "v2", "parent": "v1", "rho": rho, "content_hash": ""}
    )
    return [v0, v1, v2]


def adapter(base: Path, out: Path, seed: int) -> Path:
    """A LoRA adapter on the tiny model at `base`, with weights drawn from `seed`, saved to `out`."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(base)
    peft_model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_" in name:
                param.copy_(torch.randn(param.shape, generator=generator))
    peft_model.save_pretrained(out)
    return out


def lora_weights(model) -> dict[str, object]:
    return {name: p.detach().clone() for name, p in model.named_parameters() if "lora_" in name}
