"""Kill the recipe with SIGKILL at marked moments, relaunch it on the same directory, and check that nothing was
lost, duplicated or skipped: iterations, environment versions, checkpoints, published versions, git soundness.

The runs kill themselves at a named point (`seal_hub._kill_points`: SEAL_HUB_KILL_AT), never after a sleep,
so each kill lands where the test means it to, however fast or slow the machine is."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.run_checks import check_run, fingerprint

from seal_hub.training.run_records import is_complete

ROOT = Path(__file__).resolve().parents[1]
GROUP = 2  # rollouts per step: one task, num_generations 2 (4 tasks: 4 steps an epoch, budgets end inside it)


def recipe(model: Path, out: Path, run: str, max_steps: int) -> list[str]:
    flags = ["--model_name_or_path", str(model), "--output_dir", str(out), "--max_steps", str(max_steps)]
    flags += ["--num_train_tasks", "4", "--per_device_train_batch_size", "2", "--num_generations", str(GROUP)]
    flags += ["--max_new_tokens", "8", "--publish_run", run]
    flags += ["--held_out_comparison", "false"]  # what is checked is the run's records, not the 100-task comparison
    return [sys.executable, str(ROOT / "recipes" / "seal.py"), *flags]


def launch(command: list[str], tmp_path: Path, kill: str | None = None) -> subprocess.CompletedProcess:
    marker = tmp_path / "killed-at"
    marker.unlink(missing_ok=True)
    env = os.environ | {
        "SEAL_HUB_REGISTRY": str(tmp_path / "registry"),
        "HF_HUB_OFFLINE": "1",
        "TRL_EXPERIMENTAL_SILENCE": "1",
        "SEAL_HUB_KILL_MARKER": str(marker),
    }
    env.pop("SEAL_HUB_KILL_AT", None)
    if kill is not None:
        env["SEAL_HUB_KILL_AT"] = kill
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode == -signal.SIGKILL:
        assert marker.read_text() == kill, f"killed, but not at {kill}"
    else:
        assert done.returncode == 0, done.stderr[-3000:]
        assert not marker.exists()
    return done


def completed_steps(out: Path) -> list[int]:
    return sorted(int(p.name.split("-")[1]) for p in out.glob("checkpoint-*") if is_complete(p))


@pytest.mark.slow
def test_recipe_killed_inside_step_3_resumes_without_loss_or_duplicates(tmp_path):
    from seal_hub.models import build_tiny_model

    out, run = tmp_path / "run", "test/killed-run"
    command = recipe(build_tiny_model(tmp_path / "tiny"), out, run, max_steps=4)
    first = launch(command, tmp_path, kill="update:3")  # step 3's rollouts made, its optimizer step not
    assert first.returncode == -signal.SIGKILL
    assert completed_steps(out) == [1, 2] and (out / "iterations" / "step_000003").is_dir()
    launch(command, tmp_path)
    check_run(out, tmp_path / "registry", run, steps=4, group=GROUP)


def kill_count(point: str, remaining: int, rng: random.Random) -> int:
    """Which passage of `point` to kill at, so that the kill fires in a launch with `remaining` steps to go:
    the 1st or 2nd rollout, update or checkpoint (at most `remaining`), the 1st or 2nd push (a checkpoint
    publishes at least two: trajectories and adapter); each such kill lets at most one step finish."""
    if point == "startup":
        return 1
    return rng.randint(1, 2 if point == "publish" else max(1, min(2, remaining)))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_kill_and_relaunch_loop_ends_with_one_consistent_run(tmp_path, seed):
    """Seeded kills at each kind of moment (startup, mid-rollout, mid-update, while checkpointing, while
    publishing) in a seeded order, then inside the last step, while publishing the last checkpoint and while
    saving the final model, each followed by a relaunch; then a clean launch that must only say the run is
    complete, and one more relaunch, which must change nothing."""
    from seal_hub.models import build_tiny_model

    rng = random.Random(seed)
    out, run, registry, steps = tmp_path / "run", "test/loop", tmp_path / "registry", 4
    command = recipe(build_tiny_model(tmp_path / "tiny"), out, run, max_steps=steps)
    remaining = lambda: steps - max(completed_steps(out), default=0)  # noqa: E731
    points = ["startup", "rollout", "update", "checkpoint", "publish"]
    rng.shuffle(points)
    plan = [lambda point=point: f"{point}:{kill_count(point, remaining(), rng)}" for point in points]
    plan += [lambda: f"update:{remaining()}" if remaining() else None]  # inside the last step
    plan += [lambda: "publish:2" if remaining() else None]  # the last checkpoint's trajectories or adapter
    plan += [lambda: "save"]  # training done, the final model not yet saved
    history = []
    for choose in plan:
        spec = choose()
        if spec is None:
            continue  # the earlier kills already let the last step finish
        done = launch(command, tmp_path, kill=spec)
        history.append((spec, done.returncode, completed_steps(out)))
    print(f"seed {seed}: (kill, return code, complete checkpoints after it):", history)
    assert all(code == -signal.SIGKILL for _, code, _ in history), history

    finished = launch(command, tmp_path)
    assert f"is already complete at step {steps}" in finished.stdout.strip().splitlines()[-1], history
    check_run(out, registry, run, steps=steps, group=GROUP)
    before = fingerprint(out, registry)
    again = launch(command, tmp_path)
    assert f"is already complete at step {steps}" in again.stdout
    assert fingerprint(out, registry) == before
