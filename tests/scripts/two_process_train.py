"""Two training steps of SEAL on the tiny model, for a multi-process launch (tests/test_trainer_distributed.py)."""

import hashlib
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from seal_hub.envs.bfcl import BfclSuite  # noqa: E402
from seal_hub.models import PolicyConfig, load_policy, lora_config  # noqa: E402
from seal_hub.training import SealConfig, SealTrainer  # noqa: E402

out, model_dir = sys.argv[1], sys.argv[2]
oracle = len(sys.argv) > 3 and sys.argv[3] == "oracle-on-rank-0"  # rank 0 replays the ground truth
# one prompt's 4 rollouts split over the 2 ranks (2 each): both ranks step the same prompt
one_prompt = len(sys.argv) > 3 and sys.argv[3] == "one-prompt-on-both-ranks"
# dynamic sampling (filter, extra draws) and the frontier over tasks that pass, fail or pass half the time
dynamic = len(sys.argv) > 3 and sys.argv[3] == "dynamic-sampling"
policy = PolicyConfig(
    model_name_or_path=model_dir, use_peft=True, lora_r=4, lora_alpha=8, lora_target_modules=["q_proj", "v_proj"]
)
model, tokenizer = load_policy(policy)
suite = BfclSuite()
args = SealConfig(
    output_dir=out,
    per_device_train_batch_size=2,
    num_generations=4 if one_prompt else 2,
    max_steps=1 if one_prompt else 2,
    learning_rate=1e-3,
    beta=0.0,
    use_cpu=True,
    seed=0,
    report_to=[],
    save_strategy="steps",
    save_steps=1,
    logging_steps=1,
    # scripted calls are whole; the random model's 8 tokens are enough
    max_new_tokens=2048 if oracle or dynamic else 8,
    max_steps_per_turn=20 if oracle or dynamic else 2,
    max_context_tokens=16384,
    max_completion_length=8192,
    disable_tqdm=True,
    gradient_checkpointing=False,
    **({"dynamic_sampling": "filter", "max_extra_draws": 2, "task_sampler": "frontier"} if dynamic else {}),
)
tasks = suite.select(["multi_turn_base_1", "multi_turn_base_3", "multi_turn_base_5", "multi_turn_base_7"])
factory = None
if oracle:  # rank 0 replays the ground truth, rank 1 is the random model
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from accelerate import PartialState  # noqa: E402
    from helpers.oracle_script import oracle_script  # noqa: E402
    from helpers.scripted import ScriptedBackend  # noqa: E402

    if PartialState().process_index == 0:
        factory = lambda model, tokenizer, step: ScriptedBackend(tokenizer, oracle_script(suite))  # noqa: E731
if dynamic:
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from helpers.scripted import outcome_backend  # noqa: E402

    tasks = suite.select([f"multi_turn_base_{i}" for i in range(8)])
    outcomes = {"multi_turn_base_0": "pass", "multi_turn_base_1": "fail", "multi_turn_base_4": "fail"}
    factory = outcome_backend(suite, outcomes)
trainer = SealTrainer(
    model,
    args=args,
    processing_class=tokenizer,
    peft_config=lora_config(policy),
    suite=suite,
    train_tasks=tasks,
    backend_factory=factory,
)
slots = []  # per step: this rank's slots as TRL received them (task id, trained or masked)
rollout = trainer.rollout_func


def recording_rollout(prompts, _trainer):
    out = rollout(prompts, _trainer)
    ids = [hashlib.sha1(str(p).encode()).hexdigest()[:12] for p in out["prompt_ids"]]
    slots.append({"count": len(ids), "trained": sum(any(m) for m in out["env_mask"]), "prompts": ids})
    return out


trainer.rollout_func = recording_rollout
trainer.train()
report = {
    "rank": trainer.accelerator.process_index,
    "world": trainer.accelerator.num_processes,
    "interface": trainer.interface.content_hash,
    "rho": {str(k): v for k, v in trainer.window.rho.items()},
    "window": len(trainer.window.diagnoses),
    "slots": slots,
    "logged": [
        {k: v for k, v in entry.items() if k.startswith("seal/")}
        for entry in trainer.state.log_history
        if "seal/success_rate" in entry
    ],
}
with open(os.path.join(out, f"rank{report['rank']}.json"), "w") as handle:
    json.dump(report, handle)
