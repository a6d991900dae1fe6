"""Optional SFT warm-up on the training split's ground truth: teach a small model the tool-call format.

Reinforcement learning needs some rollouts to succeed before GRPO has an advantage to follow; a 135M model
never emits a well-formed BFCL call on its own. The warm-up replays each training task's ground truth
through the environment and turns it into a conversation in the chat-template format the rollouts use:
per turn, the user's message, one assistant message with the ground-truth tool calls, the real tool results
(rendered through the same learning interface), and a short closing reply; a turn whose ground truth makes no
call gets an abstention reply instead. TRL's `SFTTrainer` then fits the assistant messages only
(`assistant_only_loss`), on the same LoRA adapter GRPO goes on to train. Off by default (`sft_warmup_steps=0`).

Not covered: distilling from a stronger model's trajectories (any `datasets` conversation set works with
`run_warmup`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from datasets import Dataset

from seal_hub.envs.bfcl import BfclSuite, EpisodeConfig, Task
from seal_hub.envs.protocol import Action
from seal_hub.interface import InterfaceSnapshot

CLOSING = "Done."
ABSTAIN = (
    "I can't do that with the tools I have, or I'm missing something I need: could you give me the missing "
    "details, or tell me what to do instead?"
)


def ground_truth_conversation(suite: BfclSuite, task: Task, interface: InterfaceSnapshot) -> dict[str, Any]:
    """One task's ground truth as a chat conversation ({"messages", "tools"}), with real tool outputs."""
    episode = suite.episode(task, EpisodeConfig(allow_hidden_tools=True))
    observation = episode.reset()
    tools = interface.render_tools(observation.tools)
    system = interface.system_prompt()
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    messages += [m.to_chat() for m in observation.messages]
    with episode:
        for calls in task.ground_truth:
            if calls:
                results = episode.step(Action(tool_calls=calls)).observation.tool_results
                messages.append(
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [
                            {"type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                            for c in calls
                        ],
                    }
                )
                messages += [
                    {"role": "tool", "name": r.call.name, "content": interface.render_result(r)} for r in results
                ]
            messages.append({"role": "assistant", "content": CLOSING if calls else ABSTAIN})
            step = episode.step(Action(content=messages[-1]["content"]))
            if not step.done:
                messages += [m.to_chat() for m in step.observation.messages]
    return {"messages": messages, "tools": tools}


def warmup_dataset(suite: BfclSuite, tasks: Sequence[Task], interface: InterfaceSnapshot | None = None) -> Dataset:
    interface = interface or InterfaceSnapshot.null(suite.name)
    rows = [ground_truth_conversation(suite, task, interface) for task in tasks]
    # tools as JSON text: their schemas differ too much for one Arrow type; TRL decodes the string
    return Dataset.from_list([{"messages": r["messages"], "tools": json.dumps(r["tools"])} for r in rows])


def run_warmup(model, tokenizer, dataset: Dataset, steps: int, output_dir: str, learning_rate: float = 1e-4, **sft):
    """`steps` optimizer steps of TRL's SFTTrainer on `dataset` (assistant tokens only); returns the model."""
    from trl import SFTConfig, SFTTrainer

    config = SFTConfig(
        output_dir=output_dir,
        max_steps=steps,
        learning_rate=learning_rate,
        assistant_only_loss=True,
        report_to=[],
        save_strategy="no",
        logging_steps=1,
        **sft,
    )
    trainer = SFTTrainer(model=model, args=config, train_dataset=dataset, processing_class=tokenizer)
    trainer.train()
    return trainer.model
