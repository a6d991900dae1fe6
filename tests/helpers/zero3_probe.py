"""The SEAL training script with a per-rank probe, for tests/test_deepspeed.py: `accelerate launch` runs this file
instead of `-m seal_hub.scripts.seal`, with the same flags.

With ``SEAL_HUB_PROBE_DIR`` set, every rank writes ``rank<R>.json`` there when its `SealTrainer.train` returns:

- ``loop``: the loop state this rank holds (`SealTrainer.seal_state`: rho, the window, the interface, the
  environment versions), so a test can check that every rank holds the same;
- ``steps``: per generation step of this launch, a digest of every rank's rollouts as this rank gathered them
  (``{step: sha256}``), the same digest a test computes over the iteration's ``trajectories.parquet``;
- with ``SEAL_HUB_PROBE_SHAPED_REWARD=1``, the update trains on `shaped_reward` instead of the verdicts;
- ``zero3`` (under DeepSpeed ZeRO-3): the bytes this rank holds of each part DeepSpeed partitions: parameter
  partitions (``param.ds_tensor``, frozen and trainable apart), gradient partitions (the stage-3 optimizer's flat
  gradient buffer), optimizer state (the wrapped optimizer's state tensors, plus fp32 master partitions where
  they are copies rather than the parameters' own partitions), and the parameters kept whole on every rank
  (ZeRO-3's persistent parameters, below ``stage3_param_persistence_threshold``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

PROBE_ENV = "SEAL_HUB_PROBE_DIR"
SHAPED_ENV = "SEAL_HUB_PROBE_SHAPED_REWARD"  # "1": train on `shaped_reward`, not the verifier's verdict


def shaped_reward(prompt_ids: list[int], completion_ids: list[int]) -> float:
    """A training reward that differs between the rollouts of a group (the tiny random policy fails every task, so
    the verifier's rewards are all 0 and so are GRPO's advantages: no update). Records keep the verdicts."""
    return ((sum(prompt_ids) + sum(completion_ids)) % 7) / 6


def rollouts_digest(trajectories) -> str:
    """What identifies a step's rollouts: each one's task, rollout index, reward and tokens, in order."""
    rows = [[t.task_id, t.rollout_index, t.reward, list(t.token_ids)] for t in trajectories]
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()


def zero3_bytes(engine) -> dict[str, int]:
    """Bytes of this rank's ZeRO-3 partitions (DeepSpeed 0.19.8's stage-3 optimizer attributes)."""
    optimizer = engine.optimizer
    size = lambda t: t.numel() * t.element_size()  # noqa: E731
    params = list(engine.module.parameters())
    trainable = [p for p in params if p.requires_grad]
    frozen = [p for p in params if not p.requires_grad]
    flats = {id(t) for t in optimizer.fp16_partitioned_groups_flat}
    masters = [t for t in optimizer.fp32_partitioned_groups_flat if id(t) not in flats]  # real copies only
    state = [v for s in optimizer.optimizer.state.values() for v in s.values() if hasattr(v, "numel")]
    return {
        "frozen_partitions": sum(size(p.ds_tensor) for p in frozen),
        "trainable_partitions": sum(size(p.ds_tensor) for p in trainable),
        "gradient_partitions": size(optimizer.grad_partitions_flat_buffer),
        "optimizer_moments": sum(size(t) for t in state),
        "fp32_master_copies": sum(size(t) for t in masters),
        "persistent_whole": sum(size(p.data) for p in params if getattr(p, "ds_persist", False)),
        "trainable_numel": sum(p.ds_numel for p in trainable),
        "frozen_numel": sum(p.ds_numel for p in frozen),
    }


def install(folder: Path) -> None:
    import seal_hub.training.trainer as trainer_module
    from seal_hub.training import SealTrainer

    gathered: list = []
    seen: dict[int, str] = {}
    gather = trainer_module.gather_object

    def gather_object(objects):
        everyone = gather(objects)
        if everyone and hasattr(everyone[0], "token_ids"):
            gathered[:] = [everyone]
        return everyone

    rollout, train = SealTrainer._rollout, SealTrainer.train

    def _rollout(self, prompts, trainer):
        out = rollout(self, prompts, trainer)
        seen[self.state.global_step + 1] = rollouts_digest(gathered[0])
        if os.environ.get(SHAPED_ENV) == "1":
            out["seal_reward"] = [
                shaped_reward(*ids) for ids in zip(out["prompt_ids"], out["completion_ids"], strict=True)
            ]
        return out

    def probed_train(self, *args, **kwargs):
        result = train(self, *args, **kwargs)
        report = {"loop": self.seal_state(), "steps": seen, "global_step": self.state.global_step}
        if self.is_deepspeed_enabled and hasattr(self.model_wrapped, "optimizer"):
            report["zero3"] = zero3_bytes(self.model_wrapped)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"rank{self.accelerator.process_index}.json").write_text(json.dumps(report, indent=1))
        return result

    trainer_module.gather_object = gather_object
    SealTrainer._rollout, SealTrainer.train = _rollout, probed_train


if __name__ == "__main__":
    from seal_hub.console import quiet_library_notices

    quiet_library_notices()
    if os.environ.get(PROBE_ENV):
        install(Path(os.environ[PROBE_ENV]))
    from seal_hub.scripts.seal import run

    sys.exit(run(prog="zero3_probe"))
