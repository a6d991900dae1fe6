"""The replay Space under load in deployed mode (benchmarks/space_visitors.py): 32 visitors browsing while 4 live
episodes run at once, through `gradio_client` against ``seal-hub space --public`` on loopback. No errors, the
server's peak RSS within the baseline plus the LRU's budget plus the measured margin, the last line as specified."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAST = re.compile(r"^space load test: (\d+) visitors, (\d+) errors, p95 (\d+\.\d\d) s, peak RSS (\d+) MB$")


@pytest.mark.slow
def test_32_visitors_browse_while_4_live_episodes_run_and_memory_stays_bounded():
    env = os.environ | {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "space_visitors.py")],
        env=env, capture_output=True, text=True, timeout=1200, check=False,
    )  # fmt: skip
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    print("\n".join(lines[-6:]))
    visitors, errors, p95, peak = LAST.match(lines[-1]).groups()
    assert int(visitors) >= 36 and int(errors) == 0 and float(p95) > 0
    bound = next(line for line in lines if line.startswith("rss bound:"))
    assert " within " in bound and f"peak {peak} MB" in bound
    live = next(line for line in lines if line.startswith("live episodes:"))
    assert int(re.search(r"at most (\d+) at once", live).group(1)) >= 4
