"""The tests' two-step tiny-model training runs: their SealConfig settings, the LoRA policy and the trainer on two
BFCL tasks with the half-right scripted backend (test_trainer, test_publish_full, test_tracking, test_report)."""

from __future__ import annotations

from helpers.scripted import half_right


def tiny_run_settings(tmp_path, **overrides) -> dict:
    """Two steps of 2 tasks x 2 rollouts on the CPU, a checkpoint every step, nothing reported."""
    settings = dict(
        output_dir=str(tmp_path / "run"),
        per_device_train_batch_size=4,
        num_generations=2,
        max_steps=2,
        learning_rate=5e-2,
        logging_steps=1,
        save_strategy="steps",
        save_steps=1,
        report_to=[],
        max_new_tokens=2048,
        max_completion_length=8192,
        beta=0.0,
        use_cpu=True,
        seed=0,
        max_context_tokens=16384,
        disable_tqdm=True,
    )
    return settings | overrides


TASKS = ["multi_turn_base_1", "multi_turn_base_3"]


def tiny_policy(tiny_dir):
    """The tiny model at `tiny_dir` with a rank-4 LoRA on two projections."""
    from seal_hub.models import PolicyConfig

    return PolicyConfig(
        model_name_or_path=str(tiny_dir),
        use_peft=True,
        lora_r=4,
        lora_alpha=8,
        lora_target_modules=["q_proj", "v_proj"],
    )


def make_trainer(suite, tiny_dir, tmp_path, backend=None, tasks: list[str] = TASKS, callbacks=None, **overrides):
    """A `SealTrainer` on `tasks` with `tiny_run_settings` (and `overrides`); `backend`: a backend factory
    (default `half_right`); `callbacks`: the trainer's (a `PublishCallback` publishes)."""
    from seal_hub.models import load_policy, lora_config
    from seal_hub.training import SealConfig, SealTrainer

    policy = tiny_policy(tiny_dir)
    model, tokenizer = load_policy(policy)
    settings = tiny_run_settings(tmp_path, **overrides)
    return SealTrainer(
        model,
        args=SealConfig(**settings),
        processing_class=tokenizer,
        callbacks=callbacks,
        suite=suite,
        train_tasks=suite.select(tasks),
        peft_config=lora_config(policy),
        policy_id="tiny",
        backend_factory=backend or half_right(suite),
    )
