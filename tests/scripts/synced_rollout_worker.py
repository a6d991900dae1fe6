"""One rank of a two-process rollout whose forwards are collectives (tests/test_synced_generation.py).

Every forward of the tiny model first all-reduces a counter, as a ZeRO-3 or FSDP forward all-gathers its
shards: a rank that stops calling forward while the other still does leaves it waiting. Rank 0's episodes
are cut after 1 model step, rank 1's after 3 (max_steps_per_episode), so rank 0 finishes first.
Usage: python synced_rollout_worker.py RANK PORT MODEL_DIR OUT_DIR SYNCED(0|1)
"""

import json
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from seal_hub.envs.bfcl import BfclSuite, EpisodeConfig  # noqa: E402
from seal_hub.generation import HFBackend, SamplingConfig  # noqa: E402
from seal_hub.generation.synced import SyncedSteps  # noqa: E402
from seal_hub.models import PolicyConfig, load_policy  # noqa: E402
from seal_hub.rollout import RolloutConfig, RolloutEngine  # noqa: E402

rank, port, model_dir, out, synced = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] == "1"
torch.set_num_threads(1)
dist.init_process_group(
    "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2, timeout=timedelta(seconds=20)
)
model, tokenizer = load_policy(PolicyConfig(model_name_or_path=model_dir))
forwards = 0


def collective(module, args, kwargs):
    global forwards
    forwards += 1
    dist.all_reduce(torch.ones(1))  # what a sharded forward does: a collective every rank must join


model.model.register_forward_pre_hook(collective, with_kwargs=True)
eos = {tokenizer.convert_tokens_to_ids(tokenizer.eos_token)}
sync = SyncedSteps() if synced else None
backend = HFBackend(model, eos, tokenizer.pad_token_id or 0, seed=rank, synced=sync)
config = RolloutConfig(
    num_generations=2,
    sampling=SamplingConfig(temperature=1.0, max_new_tokens=4, seed=rank),
    episode=EpisodeConfig(max_steps_per_episode=1 if rank == 0 else 3),
)
suite = BfclSuite()
trajectories = RolloutEngine(backend, tokenizer, suite, config).run(suite.select(["multi_turn_base_1"]))
dist.barrier()
report = {
    "steps": [t.num_steps for t in trajectories],
    "forwards": forwards,
    "dummy_forwards": sync.dummy_forwards if sync else 0,
}
with open(os.path.join(out, f"rank{rank}.json"), "w") as handle:
    json.dump(report, handle)
dist.destroy_process_group()
