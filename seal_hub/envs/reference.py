"""A suite's reference answers as a script to teach: what the optional SFT warm-up plays for one task.

A `WarmupScript` is a fresh episode and the replies a perfect agent gives in it, in order: calling actions and
the plain messages that end each user turn (`CLOSING` after a turn's calls, `ABSTAIN` where no call belongs).
The warm-up (`seal_hub.training.warmup`) plays the replies through the episode and renders the conversation
through the learning interface, as the rollout engine would; the suite decides only what is played. With
`must_pass`, a script whose episode does not pass (end with a reward above 0) teaches nothing (a defective
answer key).

Design choice: the suite hands over actions, not chat messages, so no suite needs the interface or the rollout
engine (both sit above the suites in SEAL's loop).

Not covered: tokenizing and training on the conversations (`seal_hub.training.warmup`).
"""

from __future__ import annotations

from dataclasses import dataclass

from seal_hub.envs.protocol import Action
from seal_hub.envs.suite import SuiteEpisode

CLOSING = "Done."
ABSTAIN = (
    "I can't do that with the tools I have, or I'm missing something I need: could you give me the missing "
    "details, or tell me what to do instead?"
)


@dataclass(frozen=True)
class WarmupScript:
    """One task's reference replies and the (not yet reset) episode to play them in."""

    episode: SuiteEpisode
    replies: tuple[Action, ...]
    must_pass: bool = False  # keep the conversation only if the episode passes (reward > 0)
