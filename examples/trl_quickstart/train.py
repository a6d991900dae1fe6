"""A GRPO script written the way TRL's docs write one (TRL 1.16: `environment_factory`, a reward function that
reads the environment instances, `GRPOConfig`'s own arguments), trained with SEAL by changing two names:
`GRPOTrainer -> SealTrainer` and `GRPOConfig -> SealConfig` (and the import they come from).

SEAL then labels every failed turn, evolves the learning interface from those labels (schema cues, recovery hints,
guidelines: `output_dir/interfaces/v*.json`), reweights GRPO's advantages by the labels, and writes each
iteration's rollouts and diagnoses (`output_dir/iterations/`). `--publish_run ns/name` adds a `PublishCallback`:
every checkpoint's three artifacts (trajectories, environment version, adapter) go to the local registry.

    python examples/trl_quickstart/train.py                                  # SmolLM2-135M-Instruct, CPU
    python examples/trl_quickstart/train.py --model path/to/model --max_steps 2 --output_dir outputs/quickstart
    python examples/trl_quickstart/train.py --publish_run demo/quickstart    # publish to the local registry

The environment is a thermostat: `reset(target=...)` starts an episode from one row, `set_temperature` and
`read_temperature` are the tools (their type hints and docstrings are the schemas the model sees), and
`reward_func` scores each finished episode from the instance, 1.0 when the room reached the row's target.
Nothing in the class knows SEAL: the same script with TRL's two names trains under TRL.
"""

from __future__ import annotations

import argparse

from datasets import Dataset
from peft import LoraConfig

from seal_hub.training import SealConfig, SealTrainer  # TRL: from trl import GRPOConfig, GRPOTrainer


class Thermostat:
    """One room's thermostat; a row says the temperature to reach."""

    def reset(self, target: int = 21, **kwargs) -> str:
        self.target, self.celsius = target, 18
        return " The room is at 18 degrees."

    def set_temperature(self, celsius: int) -> str:
        """Set the room's thermostat.

        Args:
            celsius: the temperature to set, 10 to 30
        """
        if not 10 <= celsius <= 30:
            raise ValueError(f"celsius must be between 10 and 30, got {celsius}")
        self.celsius = celsius
        return f"The thermostat is set to {celsius}."

    def read_temperature(self) -> int:
        """The room's temperature now."""
        return self.celsius


def reward_func(environments, **kwargs) -> list[float]:
    """1.0 for each episode whose room reached its target."""
    return [1.0 if env.celsius == env.target else 0.0 for env in environments]


def rows(targets: range) -> list[dict]:
    return [{"prompt": [{"role": "user", "content": f"Make the room {t} degrees."}], "target": t} for t in targets]


def main(argv: list[str] | None = None) -> SealTrainer:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="HuggingFaceTB/SmolLM2-135M-Instruct")
    parser.add_argument("--output_dir", default="outputs/trl-quickstart")
    parser.add_argument("--max_steps", type=int, default=4)
    parser.add_argument("--publish_run", default=None, help="'namespace/name': publish to the local registry")
    options = parser.parse_args(argv)

    train_dataset = Dataset.from_list(rows(range(15, 27)))
    eval_dataset = Dataset.from_list(rows(range(27, 30)))  # SEAL's held-out tasks (never trained on)
    training_args = SealConfig(  # TRL: GRPOConfig
        output_dir=options.output_dir,
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=256,
        max_steps=options.max_steps,
        learning_rate=1e-5,
        logging_steps=1,
        save_strategy="steps",
        save_steps=1,
        report_to="none",
        seed=0,
    )
    callbacks = []
    if options.publish_run:
        from seal_hub.hub import PublishConfig
        from seal_hub.hub.callback import PublishCallback

        callbacks.append(PublishCallback(PublishConfig(run=options.publish_run, backend="local")))
    trainer = SealTrainer(  # TRL: GRPOTrainer
        model=options.model,
        reward_funcs=reward_func,
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        callbacks=callbacks,
        peft_config=LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"),
        environment_factory=Thermostat,
    )
    trainer.train()
    print(f"environment versions: {', '.join(trainer.store.versions())}; records in {options.output_dir}")
    return trainer


if __name__ == "__main__":
    main()
