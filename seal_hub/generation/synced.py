"""Synced generation: every rank runs the same number of forward passes, as `generate(synced_gpus=True)` does.

Under DeepSpeed ZeRO-3 with ``ds3_gather_for_generation=False``, or FSDP, each forward pass gathers every
layer's parameter shards from all ranks: it is a collective. A rank's episodes need as many forwards as their
prefill chunks and decoded tokens come to, which differs from rank to rank (one rank's episodes may end after
one step, another's after three), and a rank that stops calling forward leaves the others waiting in their
next gather forever. So, in synced mode, before each forward every rank all-reduces whether it still has work
(`SyncedSteps.step`); a rank whose own rollouts are done runs one-token dummy forwards (`SyncedSteps.drain`)
until the all-reduce says no rank has work left, and then all of them leave together.

Only when needed: `needs_synced_generation` says when (several processes and parameters sharded during
generation); otherwise the backend holds no `SyncedSteps` and pays nothing. With ZeRO-3's default
``ds3_gather_for_generation=True`` TRL's `unwrap_model_for_generation` gathers the whole model once and removes
ZeRO's hooks, so forwards are local and no syncing is needed.

Not covered: tensor or pipeline parallel inference, and a rank that raises mid-rollout (the others then wait
in their next collective until the process group's timeout, as they would in `generate`).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.distributed as dist


class SyncedSteps:
    """One all-reduce per forward pass: does any rank still have work?"""

    def __init__(self, device: torch.device | str = "cpu", group=None) -> None:
        if not (dist.is_available() and dist.is_initialized()):
            raise ValueError("synced generation needs an initialized torch.distributed process group")
        self.device = torch.device(device)
        self.group = group
        self.dummy_forwards = 0  # forwards run only to keep in step with other ranks

    def step(self, working: bool) -> bool:
        """Join this round's all-reduce; True if any rank (this one included) is working in it."""
        flag = torch.tensor([1 if working else 0], device=self.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=self.group)
        return bool(flag.item())

    def drain(self, dummy_forward: Callable[[], None]) -> int:
        """This rank is done: run `dummy_forward` once per round another rank still works; returns how many."""
        rounds = 0
        while self.step(False):
            dummy_forward()
            rounds += 1
        self.dummy_forwards += rounds
        return rounds


def needs_synced_generation(num_processes: int, zero3: bool, fsdp: bool, gathered_for_generation: bool) -> bool:
    """Whether ranks must keep their forward passes in step: several processes, and parameters that stay
    sharded during generation (FSDP, or ZeRO-3 when `ds3_gather_for_generation` is False)."""
    return num_processes > 1 and (fsdp or (zero3 and not gathered_for_generation))
