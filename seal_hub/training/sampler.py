"""The training sampler: TRL's `RepeatSampler` layout, with each epoch's shuffle a function of (seed, epoch) only.

Why: TRL 1.16's `RepeatSampler` seeds one `torch.Generator` when it is built and draws a fresh permutation from it
at every `__iter__`; it has no `set_epoch`. An uninterrupted run's epoch e is therefore the generator's (e+1)-th
permutation, while a relaunch from a checkpoint in epoch e builds a new sampler and draws its 1st: the resumed run
would train on other tasks, in another order, than the run it continues. `EpochRepeatSampler` draws epoch e's
permutation from a generator seeded afresh and advanced by the e permutations before it, so every epoch (the first
included) is exactly the permutation TRL's sampler gives an uninterrupted run with the same seed, whatever the
process iterated before. The cost is e extra `randperm` calls of the dataset's size at the start of epoch e.

Who sets the epoch: transformers' loop calls `set_epoch(epoch)` on the dataloader each epoch, which accelerate's
`DataLoaderShard` forwards to the sampler; and `DataLoaderShard.__iter__` sets its own epoch counter. One case is
not reached (accelerate 1.15, transformers 5.23): a mid-epoch resume with several processes, where
`skip_first_batches` wraps accelerate's `BatchSamplerShard` in a `SkipBatchSampler` and neither library looks
below the shard for a sampler with `set_epoch`. `SamplerEpoch`, a callback, sets the epoch at every epoch's start
from the trainer state (the epoch a resumed run re-enters), before the loop builds its iterator; the loop's own
`set_epoch`, where it reaches, comes after and sets the same number.

Distributed: every rank builds its sampler with the same seed and gets the same epoch, so every rank walks the same
permutation and accelerate's shard hands each rank its batches of it, as with TRL's sampler. The batch layout
(`mini_repeat_count`, `batch_size`, `repeat_count`, incomplete batches dropped) is TRL's own `__iter__`; only the
generator it draws from changes. Not covered: iterable datasets (TRL shuffles their stream with a buffer instead of
a sampler; SEAL's training set is a map-style `Dataset`) and the evaluation sampler (one pass, nothing to resume).
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from transformers import TrainerCallback
from trl.trainer.utils import RepeatSampler


class EpochRepeatSampler(RepeatSampler):
    """`RepeatSampler` whose epoch-e permutation is the (e+1)-th draw of a generator seeded with `seed`."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.epoch = 0

    @classmethod
    def like(cls, sampler: RepeatSampler) -> EpochRepeatSampler:
        """The data, repeats, batch and seed of TRL's `sampler` (as `GRPOTrainer._get_train_sampler` sets them)."""
        return cls(
            data_source=sampler.data_source,
            mini_repeat_count=sampler.mini_repeat_count,
            batch_size=sampler.batch_size,
            repeat_count=sampler.repeat_count,
            shuffle=sampler.shuffle,
            seed=sampler.seed,
        )

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next `__iter__` yields; without a call, every `__iter__` yields epoch 0's order."""
        if epoch < 0:
            raise ValueError(f"set_epoch got epoch={epoch}: epochs count from 0")
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        if self.shuffle:
            # `RepeatSampler.__iter__` draws one permutation from `self.generator`; give it one that has already
            # drawn epochs 0 .. epoch-1's, as TRL's single generator has in an uninterrupted run
            generator = torch.Generator()  # unseeded: torch's fixed default seed, as in `RepeatSampler`
            if self.seed is not None:
                generator.manual_seed(self.seed)
            for _ in range(self.epoch):
                torch.randperm(self.num_samples, generator=generator)
            self.generator = generator
        yield from super().__iter__()


class SamplerEpoch(TrainerCallback):
    """At each epoch's start: the tracked sampler's epoch is the trainer state's (a resumed run's: the one it
    re-enters), for the mid-epoch distributed resume that transformers' and accelerate's `set_epoch` do not reach."""

    def __init__(self) -> None:
        self.sampler: EpochRepeatSampler | None = None

    def track(self, sampler: EpochRepeatSampler) -> EpochRepeatSampler:
        """Follow `sampler` (the latest training dataloader's) from now on; returns it."""
        self.sampler = sampler
        return sampler

    def on_epoch_begin(self, args, state, control, **kwargs):
        if self.sampler is not None:
            self.sampler.set_epoch(int(state.epoch or 0))
