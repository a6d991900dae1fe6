"""Two training steps of SEAL on the tiny model, for a multi-process launch (tests/test_trainer_distributed.py)."""

import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from seal_hub.envs.bfcl import BfclSuite  # noqa: E402
from seal_hub.models import PolicyConfig, load_policy, lora_config  # noqa: E402
from seal_hub.training import SealConfig, SealTrainer  # noqa: E402

out, model_dir = sys.argv[1], sys.argv[2]
policy = PolicyConfig(
    model_name_or_path=model_dir, use_peft=True, lora_r=4, lora_alpha=8, lora_target_modules=["q_proj", "v_proj"]
)
model, tokenizer = load_policy(policy)
suite = BfclSuite()
args = SealConfig(
    output_dir=out,
    per_device_train_batch_size=2,
    num_generations=2,
    max_steps=2,
    learning_rate=1e-3,
    beta=0.0,
    use_cpu=True,
    seed=0,
    report_to=[],
    save_strategy="steps",
    save_steps=1,
    logging_steps=1,
    max_new_tokens=8,
    max_steps_per_turn=2,
    max_completion_length=8192,
    disable_tqdm=True,
    gradient_checkpointing=False,
)
tasks = suite.select(["multi_turn_base_1", "multi_turn_base_3", "multi_turn_base_5", "multi_turn_base_7"])
trainer = SealTrainer(model, args, suite, tasks, tokenizer, peft_config=lora_config(policy))
trainer.train()
report = {
    "rank": trainer.accelerator.process_index,
    "world": trainer.accelerator.num_processes,
    "interface": trainer.interface.content_hash,
    "rho": {str(k): v for k, v in trainer.window.rho.items()},
    "window": len(trainer.window.diagnoses),
}
with open(os.path.join(out, f"rank{report['rank']}.json"), "w") as handle:
    json.dump(report, handle)
