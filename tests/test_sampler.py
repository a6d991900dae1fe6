"""The training sampler: TRL's layout and TRL's uninterrupted order at every epoch, each epoch's order a function of
(seed, epoch) only, and a resumed epoch, on one rank or two, walks the batches the uninterrupted one did."""

from __future__ import annotations

import pytest
from accelerate.data_loader import prepare_data_loader, skip_first_batches
from torch.utils.data import DataLoader
from transformers import TrainerState
from trl.trainer.utils import RepeatSampler

from seal_hub.training.sampler import EpochRepeatSampler, SamplerEpoch

LAYOUTS = [  # (dataset size, mini_repeat_count, batch_size, repeat_count): an incomplete batch is dropped in two
    (2, 2, 1, 1),
    (7, 2, 3, 4),
    (12, 3, 4, 2),
    (1000, 8, 32, 1),
]


@pytest.mark.parametrize("size, mini, batch, repeat", LAYOUTS)
@pytest.mark.parametrize("seed", [0, 7, None])
def test_every_epoch_is_what_trls_sampler_gives_an_uninterrupted_run(size, mini, batch, repeat, seed):
    settings = dict(mini_repeat_count=mini, batch_size=batch, repeat_count=repeat, seed=seed)
    trl = RepeatSampler(range(size), **settings)
    ours = EpochRepeatSampler(range(size), **settings)
    for epoch in range(5):
        ours.set_epoch(epoch)
        assert list(ours) == list(trl), f"epoch {epoch}"
    assert len(ours) == len(trl)


def test_an_epochs_order_depends_on_seed_and_epoch_only():
    sampler = lambda seed: EpochRepeatSampler(range(10), mini_repeat_count=2, batch_size=2, seed=seed)  # noqa: E731

    def order(s: EpochRepeatSampler, epoch: int) -> list[int]:
        s.set_epoch(epoch)
        return list(s)

    walked = sampler(0)
    straight = [order(walked, epoch) for epoch in range(4)]
    assert len({tuple(o) for o in straight}) == 4  # the epochs differ
    assert [order(sampler(0), epoch) for epoch in range(4)] == straight  # a fresh sampler per epoch: a relaunch
    assert [order(walked, epoch) for epoch in (3, 1, 0, 2)] == [straight[e] for e in (3, 1, 0, 2)]  # any order
    assert list(walked) == list(walked) == straight[2]  # iterating again keeps the epoch set last
    assert order(sampler(1), 0) != straight[0]
    trl = RepeatSampler(range(10), mini_repeat_count=2, batch_size=2, seed=0)
    assert list(EpochRepeatSampler.like(trl)) == list(trl)  # `like` copies TRL's settings
    unshuffled = EpochRepeatSampler(range(4), mini_repeat_count=2, shuffle=False, seed=0)
    assert order(unshuffled, 3) == [0, 0, 1, 1, 2, 2, 3, 3]
    with pytest.raises(ValueError, match="epochs count from 0"):
        walked.set_epoch(-1)


def epoch_batches(dataloader, epoch: int, state_epoch: float, callback: SamplerEpoch, skip: int = 0) -> list:
    """One epoch as transformers 5.23's `_inner_training_loop` runs it: `on_epoch_begin`, `skip_first_batches` for
    a resumed epoch, `set_epoch` on the dataloader and on the batch sampler under the shard, then iterate."""
    callback.on_epoch_begin(None, TrainerState(epoch=state_epoch), None)
    if skip:
        dataloader = skip_first_batches(dataloader, skip)
    dataloader.set_epoch(epoch)
    underlying = getattr(getattr(dataloader, "batch_sampler", None), "batch_sampler", None)
    if hasattr(underlying, "set_epoch"):
        underlying.set_epoch(epoch)
    return [batch.tolist() for batch in dataloader]


@pytest.mark.parametrize("processes", [1, 2])
def test_a_resumed_epoch_walks_the_batches_of_the_uninterrupted_one_on_every_rank(processes):
    """GRPO's layout for 6 tasks, 2 rollouts each, 2 per rank a step (generation batch: 2 x processes rollouts).
    Resumed in epoch 1 after one step, each rank's batches are the rest of the uninterrupted run's; with two ranks
    `skip_first_batches` wraps accelerate's `BatchSamplerShard`, which no `set_epoch` of transformers or accelerate
    reaches through, so this is `SamplerEpoch`'s case."""
    size, generations, per_rank = 6, 2, 2

    def loader(rank: int) -> tuple:
        callback = SamplerEpoch()
        sampler = callback.track(
            EpochRepeatSampler(range(size), generations, batch_size=per_rank * processes // generations, seed=0)
        )
        plain = DataLoader(list(range(size)), batch_size=per_rank, sampler=sampler)
        return prepare_data_loader(plain, num_processes=processes, process_index=rank, put_on_device=False), callback

    ranks = []
    for rank in range(processes):
        dataloader, callback = loader(rank)
        straight = [epoch_batches(dataloader, epoch, float(epoch), callback) for epoch in range(3)]
        assert straight[0] != straight[1]  # or the resume below would prove nothing
        dataloader, callback = loader(rank)  # the relaunch: a fresh sampler, resumed at step 4 (epoch 1, step 1)
        steps = size * generations // (per_rank * processes)  # an epoch's steps
        resumed = [epoch_batches(dataloader, 1, 1 + 1 / steps, callback, skip=1)]
        resumed.append(epoch_batches(dataloader, 2, 2.0, callback))
        assert resumed == [straight[1][1:], straight[2]], f"rank {rank}"
        ranks.append(straight)
    for epoch in range(3):  # one permutation on every rank, each step's batch dealt out to the ranks in turn
        reference = EpochRepeatSampler(range(size), generations, per_rank * processes // generations, seed=0)
        reference.set_epoch(epoch)
        order = list(reference)
        batches = [order[i : i + per_rank] for i in range(0, len(order), per_rank)]
        assert [straight[epoch] for straight in ranks] == [batches[r::processes] for r in range(processes)]
