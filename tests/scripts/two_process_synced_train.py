"""One SEAL training step in two processes whose forwards are collectives and whose episodes end apart
(tests/test_trainer_distributed.py): rank 0's episodes are cut after 1 model step, rank 1's after 3.

Every forward of the policy first all-reduces, as a ZeRO-3 or FSDP forward gathers its shards; with
`synced_generation` the rank that finishes its rollouts first keeps stepping until the other is done.
Usage (under torchrun, 2 processes): two_process_synced_train.py OUT MODEL_DIR SYNCED(0|1)
"""

import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from seal_hub.envs.bfcl import BfclSuite  # noqa: E402
from seal_hub.models import PolicyConfig, load_policy, lora_config  # noqa: E402
from seal_hub.training import SealConfig, SealTrainer  # noqa: E402

out, model_dir, synced = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
rank = int(os.environ["RANK"])
torch.set_num_threads(1)
policy = PolicyConfig(
    model_name_or_path=model_dir, use_peft=True, lora_r=4, lora_alpha=8, lora_target_modules=["q_proj", "v_proj"]
)
model, tokenizer = load_policy(policy)


def collective(module, args, kwargs):
    if dist.is_initialized():
        dist.all_reduce(torch.ones(1))  # what a sharded forward does: a collective every rank must join


model.model.register_forward_pre_hook(collective, with_kwargs=True)
suite = BfclSuite()
args = SealConfig(
    output_dir=out,
    per_device_train_batch_size=2,
    num_generations=2,
    max_steps=1,
    learning_rate=1e-3,
    beta=0.0,
    use_cpu=True,
    seed=0,
    report_to=[],
    save_strategy="steps",
    save_steps=1,
    logging_steps=1,
    max_new_tokens=4,
    max_steps_per_episode=1 if rank == 0 else 3,  # the ranks' episodes end after different numbers of steps
    max_completion_length=8192,
    disable_tqdm=True,
    gradient_checkpointing=False,
    synced_generation=synced,
)
tasks = suite.select(["multi_turn_base_1", "multi_turn_base_5"])  # 4 user turns each: 3 steps fit
trainer = SealTrainer(
    model, args=args, processing_class=tokenizer, peft_config=lora_config(policy), suite=suite, train_tasks=tasks
)
trainer.train()
report = {
    "rank": trainer.accelerator.process_index,
    "world": trainer.accelerator.num_processes,
    "synced": trainer.synced is not None,
    "interface": trainer.interface.content_hash,
    "rho": {str(k): v for k, v in trainer.window.rho.items()},
    "window": len(trainer.window.diagnoses),
}
with open(os.path.join(out, f"rank{report['rank']}.json"), "w") as handle:
    json.dump(report, handle)
