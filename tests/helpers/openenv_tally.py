"""The served tally of `examples/openenv_tally` for the tests: its server started on loopback and stopped by pid,
and a TRL-form class that kills that server at a chosen tool call (a server dying mid-run)."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.error import URLError
from urllib.request import urlopen

from examples.openenv_tally.tally import Tally
from helpers.paths import ROOT
from helpers.space_app import free_port

HEALTH_TIMEOUT_S = 60.0


def start_server(log: Path, max_sessions: int = 32) -> tuple[subprocess.Popen, str]:
    """`python -m examples.openenv_tally.server` on 127.0.0.1 at a free port, once `/health` answers healthy within
    `HEALTH_TIMEOUT_S` (the server exiting or the time passing first fails, with its log's end)."""
    port = free_port()
    command = [sys.executable, "-m", "examples.openenv_tally.server", "--port", str(port)]
    with log.open("wb") as out:
        server = subprocess.Popen(
            [*command, "--max_sessions", str(max_sessions)], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
    while True:
        if server.poll() is not None:
            raise AssertionError(f"the tally server exited with {server.returncode}: {log.read_text()[-2000:]}")
        try:
            with urlopen(f"{url}/health", timeout=2) as reply:
                if json.loads(reply.read()).get("status") == "healthy":
                    return server, url
        except (URLError, ConnectionError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            stop_server(server)
            raise AssertionError(f"the tally server did not answer /health within {HEALTH_TIMEOUT_S:.0f} s")
        time.sleep(0.2)


def stop_server(server: subprocess.Popen, hard: bool = False) -> None:
    """Stop the server by its pid: SIGTERM (SIGKILL with `hard`, or when it does not exit in 10 s), then reap it."""
    if server.poll() is None:
        os.kill(server.pid, signal.SIGKILL if hard else signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(server.pid, signal.SIGKILL)
            server.wait(timeout=10)


# what KillingTally does, set by the test: at the `at`-th call of `method` ("add" or "reset") in this process,
# `kill()` runs before the call is sent
KILL: dict[str, object] = {"at": None, "kill": None, "method": "add"}
_calls = itertools.count(1)
_lock = threading.Lock()


def arm(at: int, kill: Callable[[], None], method: str = "add") -> None:
    """Make the `at`-th call of `method` from now on call `kill` first."""
    global _calls
    with _lock:
        _calls = itertools.count(1)
        KILL.update(at=at, kill=kill, method=method)


def _maybe_kill(method: str) -> None:
    with _lock:
        if KILL["method"] == method and next(_calls) == KILL["at"] and callable(KILL["kill"]):
            KILL["kill"]()


class KillingTally(Tally):
    """The tally, whose server is killed just before the armed call reaches it."""

    def reset(self, start: int = 0, target: int = 0, **row) -> None:
        _maybe_kill("reset")
        super().reset(start, target, **row)

    def add(self, amount: int) -> str:
        """Add to the tally; a negative amount subtracts.

        Args:
            amount: how much to add
        """
        _maybe_kill("add")
        return super().add(amount)
