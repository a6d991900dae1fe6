"""SFT with a frozen context: the tokens before a conversation's first trained token run without gradient.

A warm-up conversation of a tool-use suite is mostly context: the system prompt with every tool's schema and the
user's question, before a much shorter answer. Backpropagating through the context is most of a step's work, and on
a CPU most of the warm-up's time. With `sft_frozen_context` the context runs once under `torch.no_grad()` and its
key/value cache is handed to a second forward over the rest, which is trained as usual: the loss is the same number
(the same logits; checked in the tests), the gradient is the part that flows through the trained positions. What is
left out is how the LoRA weights change the context's own keys and values; the answer's queries, every later layer
at the answer positions and the MLPs still learn. Its cost and effect, measured: docs/training.md.

Not covered: batches of more than one conversation per forward (the warm-up accumulates one at a time, so nothing
is padded) and packed sequences.
"""

from __future__ import annotations

import torch
from trl import SFTTrainer


class FrozenContextSFTTrainer(SFTTrainer):
    """TRL's `SFTTrainer` whose loss runs each conversation's context (before the first label) without gradient."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        ids, labels = inputs["input_ids"], inputs["labels"]
        if ids.shape[0] != 1:
            raise ValueError(
                f"sft_frozen_context trains one conversation per forward (got a batch of {ids.shape[0]}); set "
                "per_device_train_batch_size 1 and accumulate (the warm-up's sft_batch_size does)"
            )
        trained = (labels[0] != -100).nonzero()
        if len(trained) == 0:  # nothing to learn in this conversation: TRL's own loss (zero) on it
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        split = max(1, int(trained[0]) - 1)  # the token before the first label is the first one that predicts
        with torch.no_grad():
            context = model(input_ids=ids[:, :split], use_cache=True, logits_to_keep=1)  # its logits: unused
        rest = model(input_ids=ids[:, split:], past_key_values=context.past_key_values, use_cache=False)
        logits = rest.logits[0, :-1].float()
        targets = labels[0, split + 1 :]
        total = torch.nn.functional.cross_entropy(logits, targets, ignore_index=-100, reduction="sum")
        count = num_items_in_batch if num_items_in_batch is not None else (targets != -100).sum()
        loss = total / torch.as_tensor(count, device=total.device).clamp(min=1)
        if self.args.average_tokens_across_devices and num_items_in_batch is not None:
            loss = loss * self.accelerator.num_processes  # as TRL's: DDP averages the ranks' gradients
        return (loss, rest) if return_outputs else loss
