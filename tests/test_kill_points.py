"""`seal_hub._kill_points`: a spec's point and count, SEAL_HUB_KILL_RANK choosing the one process that dies, and
SEAL_HUB_KILL_HOW=raise failing it with an exception instead."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from seal_hub._kill_points import parse

REACH = "from seal_hub._kill_points import kill_point\nfor _ in range(3): kill_point('update')\nprint('alive')"


def reach(tmp_path, rank: str | None, **env: str):
    marker = tmp_path / "marker"
    variables = {k: v for k, v in os.environ.items() if not k.startswith("SEAL_HUB_KILL") and k != "RANK"}
    variables |= {"SEAL_HUB_KILL_MARKER": str(marker), **env} | ({"RANK": rank} if rank is not None else {})
    done = subprocess.run([sys.executable, "-c", REACH], env=variables, capture_output=True, text=True, timeout=120)
    return done, marker


def test_parse_point_and_count():
    assert parse("update:2") == ("update", 2) and parse("startup") == ("startup", 1)
    with pytest.raises(ValueError, match="expected <point>"):
        parse("nowhere")


@pytest.mark.parametrize(
    "rank, chosen, dies",
    [
        (None, None, True),
        ("1", None, True),
        ("1", "1", True),
        ("0", "1", False),
        (None, "1", False),
        (None, "0", True),
    ],
)
def test_kill_rank_selects_the_process_that_dies(tmp_path, rank, chosen, dies):
    env = {"SEAL_HUB_KILL_AT": "update:2"} | ({"SEAL_HUB_KILL_RANK": chosen} if chosen is not None else {})
    done, marker = reach(tmp_path, rank, **env)
    if dies:
        assert done.returncode == -signal.SIGKILL and marker.read_text() == "update:2"
    else:
        assert done.returncode == 0 and done.stdout.strip() == "alive" and not marker.exists()


def test_kill_how_raise_fails_the_process_with_an_exception(tmp_path):
    done, marker = reach(tmp_path, None, SEAL_HUB_KILL_AT="update:2", SEAL_HUB_KILL_HOW="raise")
    assert done.returncode == 1 and "KillPointError: SEAL_HUB_KILL_AT=update:2" in done.stderr
    assert marker.read_text() == "update:2" and "alive" not in done.stdout
