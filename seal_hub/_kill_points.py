"""Test-only hook: a run that SIGKILLs itself at a named moment, so crash-and-resume tests kill where they mean to.

Tests set ``SEAL_HUB_KILL_AT=<point>[:<n>]`` in a launched run's environment: the n-th time (default 1) the
run reaches ``kill_point("<point>")`` it writes the spec to the file named by ``SEAL_HUB_KILL_MARKER`` (if
set; flushed and fsynced, so the test knows where the run died), then sends itself SIGKILL: no cleanup,
no ``finally`` blocks, no flushing of anything else, like an out-of-memory kill or a pulled plug.

Points (each reached once per occurrence in the process that reaches it):

    startup      SealTrainer.train begins, before anything is restored or trained
    rollout      a generation step's records are written, its optimizer step not yet taken
    update       advantages are computed, the loss and optimizer step not yet run
    checkpoint   a checkpoint's model, optimizer and RNG files are written, its trainer_state.json (which
                 holds SEAL's loop state, `seal_hub.training.loop_state`) not yet
    publish      a registry push wrote its git objects, its refs not yet moved (local registry)
    save         training ended, the final model not yet saved (the recipe)

``SEAL_HUB_KILL_HOW=raise`` makes the point raise `KillPointError` instead (a rank that fails with an exception,
its ``finally`` blocks and exit handlers run), for the checks that such a launch still exits non-zero.

Several processes (`accelerate launch`): every rank counts and kills on its own, unless
``SEAL_HUB_KILL_RANK=<r>`` names one: then only the process whose ``RANK`` (torchrun's global rank; unset: 0)
is r counts and dies, the others run on, as when one GPU's process is killed. Points that only the main process
reaches (rollout, checkpoint, publish) kill nothing on another rank.

Private and below every layer: nothing in the product imports it at module top level; each caller imports it
inside the function that reaches a point (the trainer through `seal_hub.training.loop_state.kill_point`), so a
normal run never loads it. Unset (the normal case) a call is one environment lookup, per step or per push only.
Not covered: killing some ranks but not all (it is one rank, or every rank), or the launcher itself.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

KILL_ENV = "SEAL_HUB_KILL_AT"
MARKER_ENV = "SEAL_HUB_KILL_MARKER"
RANK_ENV = "SEAL_HUB_KILL_RANK"
HOW_ENV = "SEAL_HUB_KILL_HOW"  # "kill" (the default: SIGKILL) or "raise"
POINTS = ("startup", "rollout", "update", "checkpoint", "publish", "save")

_reached: Counter[str] = Counter()  # per process, test-only: how often each point was passed


def parse(spec: str) -> tuple[str, int]:
    """'update:2' -> ('update', 2); 'startup' -> ('startup', 1)."""
    point, _, count = spec.partition(":")
    if point not in POINTS or (count and (not count.isdigit() or int(count) < 1)):
        raise ValueError(f"{KILL_ENV}={spec!r}: expected <point>[:<n>] with point in {', '.join(POINTS)} and n >= 1")
    return point, int(count or 1)


class KillPointError(RuntimeError):
    """What a kill point raises under ``SEAL_HUB_KILL_HOW=raise``."""


def kill_point(name: str) -> None:
    """SIGKILL this process here (or raise, ``SEAL_HUB_KILL_HOW=raise``) if ``SEAL_HUB_KILL_AT`` names this point,
    its count is reached and ``SEAL_HUB_KILL_RANK`` (if set) names this process's rank."""
    spec = os.environ.get(KILL_ENV)
    if not spec:
        return
    point, count = parse(spec)
    if point != name:
        return
    rank = os.environ.get(RANK_ENV)
    if rank is not None and rank != os.environ.get("RANK", "0"):
        return
    _reached[name] += 1
    if _reached[name] < count:
        return
    marker = os.environ.get(MARKER_ENV)
    if marker:
        with open(marker, "w", encoding="utf-8") as handle:
            handle.write(spec)
            handle.flush()
            os.fsync(handle.fileno())
    if os.environ.get(HOW_ENV, "kill") == "raise":
        raise KillPointError(f"{KILL_ENV}={spec}: raised at the kill point, as {HOW_ENV}=raise asks")
    os.kill(os.getpid(), signal.SIGKILL)
