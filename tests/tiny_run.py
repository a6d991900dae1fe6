"""The SealConfig settings of the tests' two-step tiny-model runs (test_trainer, test_publish_full): one place."""

from __future__ import annotations


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
