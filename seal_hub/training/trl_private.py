"""Every private member of TRL's `GRPOTrainer` (and of the transformers `Trainer` under it) that SEAL touches, in one
table: which, where, why no public hook does it, and the versions it was checked against.

`SealTrainer` is TRL plus SEAL through public doors where TRL has them (`rollout_func`, `callbacks`, `TrainerCallback`
events, the stateful-callback checkpoint state). What is left below has no public equivalent in TRL 1.16: a TRL
release may rename or remove any of it without notice, so `tests/test_trl_private.py` checks each entry against the
installed `trl.GRPOTrainer` and fails, naming the member, when one is gone or its parameters moved. After upgrading
TRL or transformers: re-read each entry's use against the new source, then update `CHECKED`.

Not covered: TRL's public API, which SEAL uses freely (`unwrap_model_for_generation`, `DistributedBackend`,
`RepeatSampler`, `vllm_generation.sync_weights`, `Trainer.log`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# the releases every entry was read against (pyproject.toml pins them exactly)
CHECKED = {"trl": "1.16.0", "transformers": "5.23.0"}


@dataclass(frozen=True)
class PrivateMember:
    """One private member: `override` (SealTrainer redefines it and calls TRL's; `params` are the leading parameters
    it passes on), `method` (called), `attribute` (an instance attribute read or written), `class attribute`."""

    name: str
    kind: Literal["override", "method", "attribute", "class attribute"]
    where: str  # the seal_hub module that touches it
    why: str
    params: tuple[str, ...] = ()


PRIVATE_MEMBERS = (
    PrivateMember(
        "_generate_and_score_completions",
        "override",
        "training/trainer.py",
        "SEAL's rollout weights w_j multiply TRL's group-normalised advantages: TRL computes them here, and no "
        "hook sits between the advantages and the loss",
        ("self", "inputs"),
    ),
    PrivateMember(
        "_prepare_inputs",
        "override",
        "training/trainer.py",
        "TRL's buffering of one generation's micro-batches: regrouped so each micro-batch holds whole groups for "
        "the shared-prompt forward (`shared_prompt.whole_groups`)",
        ("self", "generation_batch"),
    ),
    PrivateMember(
        "_get_per_token_logps_and_entropies",
        "override",
        "training/trainer.py",
        "the loss forward: each distinct prompt run once (`shared_prompt`), TRL's forward otherwise",
        ("self", "model", "input_ids", "attention_mask", "logits_to_keep", "batch_size", "compute_entropy"),
    ),
    PrivateMember(
        "_get_train_sampler",
        "override",
        "training/trainer.py",
        "TRL's RepeatSampler with each epoch's order a function of (seed, epoch), so a resumed run draws what the "
        "uninterrupted one would (`sampler.EpochRepeatSampler`); transformers has no public sampler hook",
        ("self", "dataset"),
    ),
    PrivateMember(
        "save_model",
        "override",
        "training/trainer.py",
        "public, but its private `_internal_call` tells transformers' checkpoint saves from the final save, which "
        "a completed run answers with its last checkpoint's files",
        ("self", "output_dir", "_internal_call"),
    ),
    PrivateMember(
        "_load_from_checkpoint",
        "method",
        "training/trainer.py",
        "a relaunch of a run that reached its budget loads the checkpoint's weights without entering the loop "
        "(transformers' Trainer does it only inside `train`)",
        ("self", "resume_from_checkpoint"),
    ),
    PrivateMember(
        "_log_metric",
        "method",
        "training/trainer.py",
        "handed to a user's reward functions as `log_metric`, as TRL hands it to its own",
        ("self", "name", "value"),
    ),
    PrivateMember(
        "_metrics",
        "attribute",
        "training/trainer.py",
        "SEAL's per-step values (success, rho, label prevalence, groups) join TRL's training log, averaged and "
        "flushed with TRL's own",
    ),
    PrivateMember(
        "_buffered_inputs",
        "attribute",
        "training/trainer.py",
        "read and replaced by the `_prepare_inputs` override (whole groups per micro-batch)",
    ),
    PrivateMember(
        "_step",
        "attribute",
        "training/trainer.py",
        "tells the `_prepare_inputs` override whether this call generated a fresh batch",
    ),
    PrivateMember(
        "_last_loaded_step",
        "attribute",
        "training/step_backend.py",
        "under vLLM, a held-out evaluation syncs the weights as TRL does before generating, once per step",
    ),
    PrivateMember(
        "_tag_names",
        "class attribute",
        "training/trainer.py",
        "TRL's model-card metadata: the tags of the cards and model TRL writes",
    ),
    PrivateMember("_name", "class attribute", "training/trainer.py", "TRL's model-card metadata: the method's name"),
    PrivateMember("_paper", "class attribute", "training/trainer.py", "TRL's model-card metadata: the paper cited"),
)
