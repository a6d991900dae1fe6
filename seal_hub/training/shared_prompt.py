"""Log-probabilities of GRPO completions with each distinct prompt run through the model once, not G times.

GRPO scores `num_generations` completions of every prompt, and TRL's `_get_per_token_logps_and_entropies`
runs each row's whole sequence (prompt + completion) through the model. On a single-turn task the prompt is
most of the sequence (the offered functions' schemas: 300-600 tokens against a 20-60 token answer), so the
loss forward and backward spend most of their work recomputing the same prompt G times.

`shared_prompt_logps` computes the same quantities in two passes:

1. every distinct prompt (token ids and mask), less its last token, once, keeping its key/value cache (with
   the autograd graph: gradients reach the prompt's activations as in the full forward);
2. each row's last prompt token and completion, attending to its prompt's cache (selected per row, which
   autograd sums back over the rows that share it), through TRL's fused log-prob head.

The product is the same as TRL's (the same positions, mask, labels and head; the test checks log-probs,
entropies and LoRA gradients against TRL's own function); only the work differs. It applies to text-only
batches without an auxiliary MoE loss and without gradient checkpointing (which turns the cache off);
`SealTrainer` calls TRL's function otherwise, and when no two rows of a micro-batch share a prompt.

TRL cuts a generation batch into micro-batches of `per_device_train_batch_size` rows after shuffling it, so a
micro-batch holds pieces of several groups; `whole_groups` puts each group's rows together again where that
changes no gradient (one optimizer step per generation), and `SealTrainer` applies it to each new generation.

Not covered: sharing across micro-batches (a group larger than a micro-batch runs its prompt once per piece).
"""

from __future__ import annotations

import torch


def prompt_groups(prompt_ids: torch.Tensor, prompt_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(index of each distinct prompt's first row, the distinct prompt each row holds)."""
    keys = torch.cat([prompt_ids, prompt_mask.to(prompt_ids.dtype)], dim=1)
    _, inverse = torch.unique(keys, dim=0, return_inverse=True)
    first = torch.full((int(inverse.max()) + 1,), keys.size(0), dtype=torch.long, device=keys.device)
    first = first.scatter_reduce(0, inverse, torch.arange(keys.size(0), device=keys.device), reduce="amin")
    return first, inverse


def shares_prompts(input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int) -> bool:
    """Whether some two rows hold the same prompt, so that the shared forward saves work."""
    prompt_length = input_ids.size(1) - logits_to_keep
    if prompt_length < 2 or input_ids.size(0) < 2:
        return False
    first, _ = prompt_groups(input_ids[:, :prompt_length], attention_mask[:, :prompt_length])
    return first.numel() < input_ids.size(0)


def shared_prompt_logps(
    model, input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int, compute_entropy: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-token log-probs (and entropies) of the last `logits_to_keep` positions, as TRL's function returns
    them for a model patched with its fused LM head (`trl.trainer.utils.add_fused_lm_head`)."""
    prompt_length = input_ids.size(1) - logits_to_keep
    first, inverse = prompt_groups(input_ids[:, :prompt_length], attention_mask[:, :prompt_length])
    head = prompt_length - 1  # the last prompt token goes with the completion: its logits score the first token
    prompt_out = model(
        input_ids=input_ids[first, :head],
        attention_mask=attention_mask[first, :head],
        use_cache=True,
        logits_to_keep=1,
    )
    cache = prompt_out.past_key_values
    cache.batch_select_indices(inverse)  # each row's prompt KV (differentiable: gradients sum over the group)
    tail_ids, tail_mask = input_ids[:, head:], attention_mask[:, head:]
    labels = tail_ids.masked_fill(tail_mask == 0, -100)
    labels[:, :1] = -100  # the last prompt token is not scored (TRL: labels[:, :-logits_to_keep] = -100)
    outputs = model(
        input_ids=tail_ids,
        attention_mask=attention_mask,
        past_key_values=cache,
        labels=labels,
        fused_lm_head=True,
    )
    logps = outputs.log_probs[:, -logits_to_keep:]
    entropies = outputs.entropy[:, -logits_to_keep:] if compute_entropy else None
    return logps, entropies


def whole_groups(batches: list[dict]) -> list[dict]:
    """The micro-batches of one generation, their rows reordered so that rows of the same prompt sit together
    (groups in order of first appearance, rows in their order), cut into as many micro-batches of the same size.

    TRL shuffles a generation batch's rows before cutting it into micro-batches, so a micro-batch of G rows holds
    pieces of several groups and the shared forward runs several prompts. When one optimizer step takes the whole
    generation (`steps_per_generation == gradient_accumulation_steps`) the step's gradient is the sum over all its
    rows whatever their order, so reordering them changes no gradient, only how many prompts each micro-batch runs.
    """
    keys = [key for key, value in batches[0].items() if isinstance(value, torch.Tensor) and value.ndim > 0]
    lists = [key for key, value in batches[0].items() if isinstance(value, list)]
    merged = {key: torch.cat([b[key] for b in batches]) for key in keys}
    merged |= {key: [item for b in batches for item in b[key]] for key in lists}
    _, inverse = prompt_groups(merged["prompt_ids"], merged["prompt_mask"])
    first_seen = {}
    for row, group in enumerate(inverse.tolist()):
        first_seen.setdefault(group, row)
    order = sorted(range(len(inverse)), key=lambda row: (first_seen[int(inverse[row])], row))
    index = torch.tensor(order, device=inverse.device)
    size = len(order) // len(batches)
    out = []
    for chunk in range(len(batches)):
        rows = index[chunk * size : (chunk + 1) * size]
        batch = dict(batches[chunk])  # scalars (num_items_in_batch) and None as they were
        batch |= {key: merged[key][rows] for key in keys}
        batch |= {key: [merged[key][i] for i in rows.tolist()] for key in lists}
        out.append(batch)
    return out
