"""Synced generation in two CPU processes (gloo) whose forwards are collectives, as sharded ones are.

Rank 0's episodes end after 1 model step, rank 1's after 3. With synced generation both ranks run the same
number of forwards (rank 0 fills in with dummy ones) and finish; without it, rank 0 leaves while rank 1 still
waits in its forward's collective, and the run fails (the process group's 20 s timeout) instead of finishing.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.extras import require_bfcl

WORKER = Path(__file__).parent / "scripts" / "synced_rollout_worker.py"


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from seal_hub.models import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def launch(tiny_dir: Path, out: Path, synced: bool) -> list[subprocess.CompletedProcess]:
    port, env = str(free_port()), os.environ | {"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, str(WORKER)]
    ranks = [
        subprocess.Popen(
            [*command, str(rank), port, str(tiny_dir), str(out), "1" if synced else "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for rank in (0, 1)
    ]
    done = []
    for process in ranks:
        try:
            stdout, stderr = process.communicate(timeout=300)
        except subprocess.TimeoutExpired:  # a hang: never let it outlive the test
            for other in ranks:
                other.kill()
            raise
        done.append(subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr))
    return done


def test_ranks_whose_episodes_end_at_different_steps_keep_stepping_together(tiny_dir, tmp_path):
    require_bfcl()  # its suite is BFCL's
    done = launch(tiny_dir, tmp_path, synced=True)
    assert [d.returncode for d in done] == [0, 0], done[0].stderr[-2000:] + done[1].stderr[-2000:]
    first, second = (json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1))
    assert first["steps"] == [1, 1] and second["steps"] == [3, 3]  # the ranks' episodes did end apart
    assert first["forwards"] == second["forwards"]  # every collective forward had its partner
    assert first["dummy_forwards"] > 0 == second["dummy_forwards"]  # the rank done first kept stepping


@pytest.mark.slow
def test_without_synced_generation_the_same_run_fails(tiny_dir, tmp_path):
    done = launch(tiny_dir, tmp_path, synced=False)
    assert any(d.returncode != 0 for d in done)
    assert not (tmp_path / "rank1.json").exists()  # the rank with more steps never got through its rollouts


@pytest.mark.parametrize(
    ("processes", "zero3", "fsdp", "gathered", "expected"),
    [
        (1, True, False, False, False),  # one process: nothing to keep in step with
        (2, False, False, True, False),  # DDP: every rank holds the whole model
        (2, True, False, True, False),  # ZeRO-3 gathered once for generation: forwards are local
        (2, True, False, False, True),  # ZeRO-3 left sharded: every forward gathers
        (2, False, True, True, True),  # FSDP: every forward gathers
    ],
)
def test_synced_generation_is_on_only_when_forwards_are_collectives(processes, zero3, fsdp, gathered, expected):
    from seal_hub.generation.synced import needs_synced_generation

    assert needs_synced_generation(processes, zero3, fsdp, gathered) is expected


def test_synced_steps_need_a_process_group():
    from seal_hub.generation.synced import SyncedSteps

    with pytest.raises(ValueError, match="initialized torch.distributed process group"):
        SyncedSteps()
