"""Kill the recipe with SIGKILL in the middle of a run, relaunch it on the same directory, and check that
nothing was lost, duplicated or skipped: iterations, interface versions, published versions."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seal_hub.rollout.records import read_trajectories

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_recipe_killed_midway_resumes_without_loss_or_duplicates(tmp_path, monkeypatch):
    from seal_hub.hub import get_registry
    from seal_hub.models import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny")
    out = tmp_path / "run"
    env = os.environ | {
        "SEAL_HUB_REGISTRY": str(tmp_path / "registry"),
        "HF_HUB_OFFLINE": "1",
        "TRL_EXPERIMENTAL_SILENCE": "1",
    }
    command = [
        sys.executable,
        str(ROOT / "recipes" / "seal.py"),
        "--model_name_or_path",
        str(model),
        "--output_dir",
        str(out),
        "--max_steps",
        "4",
        "--num_train_tasks",
        "4",
        "--max_new_tokens",
        "8",
        "--publish_run",
        "test/killed-run",
    ]
    first = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while not (out / "checkpoint-2" / "seal_state.json").exists():  # killed somewhere inside step 3
        assert first.poll() is None and time.time() < deadline, "the first run ended before it could be killed"
        time.sleep(0.2)
    time.sleep(1.0)
    first.send_signal(signal.SIGKILL)
    first.wait()
    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]

    steps = sorted(p.name for p in (out / "iterations").iterdir())
    assert steps == [f"step_{k:06d}" for k in (1, 2, 3, 4)]
    for step in steps:
        assert len(read_trajectories(out / "iterations" / step / "trajectories.parquet")) == 2  # one group each
    versions = sorted(int(p.stem[1:]) for p in (out / "interfaces").glob("v*.json"))
    assert versions == list(range(len(versions)))
    used = {json.loads((out / "iterations" / s / "metrics.json").read_text())["interface_version"] for s in steps}
    assert used <= {f"v{v}" for v in versions}
    monkeypatch.setenv("SEAL_HUB_REGISTRY", env["SEAL_HUB_REGISTRY"])
    registry = get_registry("local")
    assert [v.tag for v in registry.versions("test/killed-run-adapter", "model")] == [
        "iter-1",
        "iter-2",
        "iter-3",
        "iter-4",
    ]
    assert [v.tag for v in registry.versions("test/killed-run-trajectories", "dataset")] == [
        "iter-1",
        "iter-2",
        "iter-3",
        "iter-4",
    ]
