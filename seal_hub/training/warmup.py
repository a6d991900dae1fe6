"""Optional SFT warm-up on the training split's reference answers: teach a small model the tool-call format.

Reinforcement learning needs some rollouts to succeed before GRPO has an advantage to follow; a 135M model
never emits a well-formed call on its own. The warm-up turns each training task's reference answer into a
conversation. The suite says what is taught (`Suite.warmup_script`, `seal_hub.envs.reference`: a fresh episode and
the replies a perfect agent gives in it); this module plays the replies through the episode, so tool results are
real, and renders the conversation. BFCL multi-turn teaches each turn's ground-truth calls with a short closing
reply (an abstention where the turn makes no call); BFCL single-turn the answer key's calls (an abstention for an
irrelevance question), only where its own checker passes them.

What is taught is what the rollouts show and the parser reads: the first prompt is the engine's
(`first_messages`: the interface's system prompt and tools), each model message is the engine's
(`assistant_message`: calls with their arguments as JSON objects, as the chat template writes them and the
parser reads them back), tool results are the engine's (`observation_messages`), and the tokens are cut as the
engine cuts them: the chat template's text up to each generation prompt is context, and each assistant message
up to its end-of-turn token is the loss (`conversation_tokens`). The dataset holds `input_ids` and `labels`
(-100 off the assistant tokens), which TRL's `SFTTrainer` takes as they are, on the same LoRA adapter GRPO goes on
to train. Off by default (`sft_warmup_steps=0`).

`shared_warmup` lets several runs start from one warm-up (the experiment's arms of one seed): the first run
trains it and saves the adapter with the settings that made it (`warmup.json`) in the shared folder; a later
run with the same settings loads that adapter instead of training again, and one with other settings is
refused (it would not start from the same warm-up). The card PEFT writes beside the adapter is corrected as a
training folder's (`seal_hub.hub.cards.correct_training_card`): it names no path of this machine.

`WarmupArguments` are the training script's flags for it (`sft_*`), and `warm_up` is what the script calls: the
policy wrapped in its LoRA adapter, then trained (or loaded from the shared folder) on the training tasks.

Not covered: distilling from a stronger model's trajectories (any tokenized dataset works with `run_warmup`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from datasets import Dataset

from seal_hub.envs.suite import Suite, SuiteTask
from seal_hub.interface import InterfaceSnapshot
from seal_hub.models.default_system import template_default_system
from seal_hub.models.end_tokens import template_end_of_turn
from seal_hub.rollout.engine import (
    ChatRenderer,
    TemplateError,
    assistant_message,
    first_messages,
    observation_messages,
)

if TYPE_CHECKING:
    from seal_hub.models import PolicyConfig
    from seal_hub.training.config import SealConfig

Conversation = dict[str, Any]  # {"messages": chat messages, "tools": the tools shown}


def warmup_conversation(
    suite: Suite, task: SuiteTask, interface: InterfaceSnapshot, default_system: str | None = None
) -> Conversation | None:
    """One task's reference conversation: the suite's script (`Suite.warmup_script`) played through its episode
    and rendered as the rollout engine renders it (`default_system`: the chat template's, as `first_messages`
    takes it); None where the suite has nothing to teach for the task (or a script that must pass did not)."""
    script = suite.warmup_script(task)
    if script is None:
        return None
    episode = script.episode
    messages, tools = first_messages(interface, episode.reset(), default_system)
    reward = None
    try:
        for reply in script.replies:
            messages.append(assistant_message(reply))
            step = episode.step(reply)
            reward = step.reward
            if not step.done:
                messages += observation_messages(interface, tools, step.observation)
    finally:
        episode.close()
    if script.must_pass and not (reward is not None and reward > 0):  # passed: reward above 0
        return None
    return {"messages": messages, "tools": tools}


def warmup_conversations(
    suite: Suite,
    tasks: Sequence[SuiteTask],
    interface: InterfaceSnapshot | None = None,
    default_system: str | None = None,
) -> list[Conversation]:
    """The reference answers of `tasks` as conversations (tasks with nothing to teach are left out)."""
    interface = interface or InterfaceSnapshot.null(suite.name)
    conversations = (warmup_conversation(suite, task, interface, default_system) for task in tasks)
    return [c for c in conversations if c is not None]


def conversation_tokens(tokenizer, conversation: Conversation) -> dict[str, list[int]]:
    """`input_ids` and `labels` of a conversation as the rollout engine would hold it: the template's text up to
    each generation prompt is context (-100), each assistant message up to its end-of-turn token is the loss."""
    end = template_end_of_turn(tokenizer)
    if end is None:
        raise TemplateError("the chat template ends no assistant message with a special token; the warm-up needs one")
    renderer = ChatRenderer(tokenizer, end)
    messages, tools = conversation["messages"], conversation["tools"]
    ids: list[int] = []
    labels: list[int] = []
    done = ""
    for index, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        prompt = renderer.text(messages[:index], tools, generation_prompt=True)
        full = renderer.text(messages[: index + 1], tools, generation_prompt=False)
        if not (prompt.startswith(done) and full.startswith(prompt)):
            raise TemplateError("the chat template re-renders earlier messages when one is appended")
        reply = full[len(prompt) :]
        cut = reply.find(end)
        reply = reply[: cut + len(end)] if cut >= 0 else reply
        context, answer = renderer.encode(prompt[len(done) :]), renderer.encode(reply)
        ids += context + answer
        labels += [-100] * len(context) + answer
        done = prompt + reply
    return {"input_ids": ids, "labels": labels}


def no_answers_error(suite: Suite, count: int) -> ValueError:
    return ValueError(
        f"none of the {count} training tasks of {suite.name} has a reference answer to warm up on (a user "
        "environment's dataset gives them in a reference_calls column); set sft_warmup_steps 0"
    )


def require_answers(suite: Suite, tasks: Sequence[SuiteTask]) -> None:
    """Refuse a warm-up, before any model loads, where no training task has a reference answer to teach."""
    if not any(suite.warmup_script(task) is not None for task in tasks):
        raise no_answers_error(suite, len(tasks))


def warmup_dataset(
    suite: Suite, tasks: Sequence[SuiteTask], tokenizer, interface: InterfaceSnapshot | None = None
) -> Dataset:
    """The warm-up's training set: each task's reference conversation, tokenized (`conversation_tokens`)."""
    conversations = warmup_conversations(suite, tasks, interface, template_default_system(tokenizer))
    rows = [conversation_tokens(tokenizer, c) for c in conversations]
    if not rows:
        raise no_answers_error(suite, len(tasks))
    return Dataset.from_list(rows)


def run_warmup(
    model,
    tokenizer,
    dataset: Dataset,
    steps: int,
    output_dir: str,
    learning_rate: float = 1e-4,
    frozen_context: bool = False,
    **sft,
):
    """`steps` optimizer steps of TRL's SFTTrainer on `dataset` (its `labels`: assistant tokens only); with
    `frozen_context`, each conversation's context before its first trained token runs without gradient
    (`seal_hub.training.frozen_context`)."""
    from trl import SFTConfig, SFTTrainer

    from seal_hub.training.frozen_context import FrozenContextSFTTrainer

    config = SFTConfig(
        output_dir=output_dir,
        max_steps=steps,
        learning_rate=learning_rate,
        report_to=[],
        save_strategy="no",
        logging_steps=1,
        **sft,
    )
    kind = FrozenContextSFTTrainer if frozen_context else SFTTrainer
    trainer = kind(model=model, args=config, train_dataset=dataset, processing_class=tokenizer)
    trainer.train()
    return trainer.model


WARMUP_RECORD = "warmup.json"


class WarmupMismatchError(ValueError):
    """A shared warm-up folder holds a warm-up made with other settings."""


def shared_warmup(
    model, folder: str | Path, settings: dict[str, Any], train: Callable[[], Any], is_main: bool = True, barrier=None
) -> bool:
    """Load the warm-up saved in `folder` into `model` (a PEFT model) when it was made with `settings`; else run
    `train()` and save the adapter there (the main process, then `barrier`). True when it was loaded."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    from seal_hub.atomic import write_text
    from seal_hub.hub.cards import correct_training_card

    folder = Path(folder)
    record = folder / WARMUP_RECORD
    settings = json.loads(json.dumps(settings))  # as it reads back from disk
    if record.exists():
        saved = json.loads(record.read_text(encoding="utf-8"))
        if saved != settings:
            differ = sorted(k for k in {*saved, *settings} if saved.get(k) != settings.get(k))
            raise WarmupMismatchError(
                f"{folder}: holds a warm-up made with other settings ({', '.join(differ)} differ); "
                "use another folder or delete it"
            )
        result = set_peft_model_state_dict(model, load_file(str(folder / "adapter_model.safetensors")))
        if getattr(result, "unexpected_keys", None):
            raise WarmupMismatchError(f"{folder}: its adapter does not fit this model ({result.unexpected_keys[:3]})")
        return True
    train()
    if is_main:
        model.save_pretrained(str(folder))
        correct_training_card(folder, getattr(model.config, "name_or_path", None))  # PEFT's card: no host path
        # written last: a folder without it holds no finished warm-up
        write_text(record, json.dumps(settings, indent=2, sort_keys=True) + "\n")
    if barrier is not None:
        barrier()
    return False


@dataclass
class WarmupArguments:
    """The training script's SFT warm-up flags and YAML keys (off by default)."""

    sft_warmup_steps: int = field(
        default=0,
        metadata={"help": "SFT steps on the training tasks' ground truth before SEAL (format teaching); 0: none."},
    )
    sft_learning_rate: float = field(default=1e-4, metadata={"help": "Learning rate of the SFT warm-up."})
    sft_batch_size: int = field(
        default=1, metadata={"help": "Conversations per SFT warm-up step (accumulated one at a time: no padding)."}
    )
    sft_frozen_context: bool = field(
        default=False,
        metadata={
            "help": "Run each warm-up conversation's context (before its first trained token) without gradient: "
            "about 2x faster per conversation on the CPU demo; the answer positions still learn "
            "(seal_hub.training.frozen_context)."
        },
    )
    sft_warmup_dir: str | None = field(
        default=None,
        metadata={
            "help": "A folder runs share to start from one warm-up (the experiment's arms of a seed): the first run "
            "trains the warm-up and saves it there, a later one with the same settings loads it; unset: "
            "output_dir/sft-warmup, not shared."
        },
    )


def warm_up(
    model,
    peft_config,
    tokenizer,
    suite: Suite,
    tasks: Sequence[SuiteTask],
    args: WarmupArguments,
    config: SealConfig,
    model_args: PolicyConfig,
):
    """The SFT warm-up on the training tasks' answers, or the shared one `sft_warmup_dir` already holds; returns
    the model wrapped in the LoRA adapter of `peft_config` (None: `model` as it is), which GRPO goes on training."""
    from accelerate import PartialState
    from accelerate.utils import set_seed
    from peft import get_peft_model

    # PEFT draws the adapter's initial weights from the global RNG, which torch seeds anew in every process: seeded
    # here (as TRL's GRPOTrainer seeds before its own get_peft_model), the warm-up is a function of `config.seed`
    set_seed(config.seed)
    model = get_peft_model(model, peft_config) if peft_config is not None else model
    steps = args.sft_warmup_steps

    def train() -> None:
        run_warmup(
            model,
            tokenizer,
            warmup_dataset(suite, tasks, tokenizer),
            steps,
            output_dir=str(Path(config.output_dir) / "sft-warmup"),
            learning_rate=args.sft_learning_rate,
            frozen_context=args.sft_frozen_context,
            use_cpu=config.use_cpu,
            bf16=config.bf16,
            per_device_train_batch_size=1,  # one conversation a pass, accumulated: no padding to compute
            gradient_accumulation_steps=args.sft_batch_size,
            max_length=config.max_context_tokens,
            seed=config.seed,
            gradient_checkpointing=config.gradient_checkpointing,  # TRL's SFTConfig would default to True
        )

    if args.sft_warmup_dir is None:
        train()
        return model
    if not hasattr(model, "peft_config"):
        raise WarmupMismatchError("sft_warmup_dir shares a LoRA warm-up: it needs use_peft true")
    settings = {
        "model": [model_args.model_name_or_path, model_args.model_revision],
        "lora": [model_args.lora_r, model_args.lora_alpha, model_args.lora_target_modules],
        "tasks": [task.id for task in tasks],
        "steps": steps,
        "learning_rate": args.sft_learning_rate,
        "batch_size": args.sft_batch_size,
        "seed": config.seed,
        "max_length": config.max_context_tokens,
    }
    if args.sft_frozen_context:  # only when on: warm-ups shared before the option existed stay valid
        settings["frozen_context"] = True
    state = PartialState()
    loaded = shared_warmup(model, args.sft_warmup_dir, settings, train, state.is_main_process, state.wait_for_everyone)
    if loaded and state.is_main_process:
        print(f"SFT warm-up: loaded the shared one in {args.sft_warmup_dir} ({steps} steps, same settings)")
    return model
