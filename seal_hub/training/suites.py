"""Which suites SEAL trains on, and the one fact about each that training needs beyond the suite contract.

A suite can train when its turn verdicts map to the failure labels (`seal_hub.diagnosis.TURN_LABELERS`), it has
a train/test split whose test half is never trained on (`Suite.split_ids`), and its reference answers can
drive an SFT warm-up (`seal_hub.training.warmup`). Today: `bfcl` (multi-turn, executed) and `bfcl-single`
(single-turn, checked, never executed). `tool_errors` says whether tools run and can fail in the suite, so that
recovery hints (the interface's recovery feedback) apply; single-turn answers never run, so there they do not.

The two other suites cannot train yet, each for its own reason (`NOT_TRAINABLE`, said in one line by
`training_suite`):
- tau2-telecom: its verdict is one end-of-episode check by tau2's evaluator (reward only, no expected calls per
  turn to label a turn by), and its 114 tasks are the paper's out-of-distribution test, with no train split;
- bfcl-memory: its prerequisite turns pass by construction and only the final answer is scored, so a failure
  profile would be mostly `pass` with one unexplained miss; its chains run to ~25k tokens; and it is the
  paper's out-of-distribution test as well.

Not covered: the trainer itself (`seal_hub.training.trainer`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TrainingSuite:
    name: str
    tool_errors: bool  # tools execute and can fail: recovery hints have something to say


TRAINABLE: dict[str, TrainingSuite] = {
    "bfcl": TrainingSuite("bfcl", tool_errors=True),
    "bfcl-single": TrainingSuite("bfcl-single", tool_errors=False),
}

NOT_TRAINABLE: dict[str, str] = {
    "tau2-telecom": "its verdict is one end-of-episode check with no expected calls per turn to label, and its "
    "tasks are an out-of-distribution test set with no train split",
    "bfcl-memory": "only its final answer is scored (the prerequisite turns pass by construction), so its turns "
    "do not map to the failure labels, and its tasks are an out-of-distribution test set",
}


def training_suite(name: str) -> TrainingSuite:
    """The trainable suite called `name`; anything else is a one-line `ValueError` naming the trainable ones."""
    support = TRAINABLE.get(name)
    if support is not None:
        return support
    choices = ", ".join(TRAINABLE)
    if name in NOT_TRAINABLE:
        raise ValueError(f"suite {name!r} cannot train ({NOT_TRAINABLE[name]}); trainable suites: {choices}")
    raise ValueError(f"unknown suite {name!r}; trainable suites: {choices}")
