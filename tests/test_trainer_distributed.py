"""SEAL in two CPU processes (gloo): both ranks see every rank's diagnoses and end in the same state.

`accelerate launch` runs several CPU processes only through MPI (`--mpirun_hostfile`), which this machine
lacks; `torchrun` sets the same environment accelerate reads, so it stands in for it here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from seal_hub.rollout.records import read_trajectories


@pytest.mark.slow
def test_two_processes_share_the_loop_and_keep_every_rollout(tmp_path):
    from seal_hub.models import build_tiny_model

    model_dir = build_tiny_model(tmp_path / "tiny")
    out = tmp_path / "run"
    script = Path(__file__).parent / "scripts" / "two_process_train.py"
    env = os.environ | {"OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            "2",
            str(script),
            str(out),
            str(model_dir),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    reports = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert {r["world"] for r in reports} == {2}
    assert reports[0]["interface"] == reports[1]["interface"] and reports[0]["rho"] == reports[1]["rho"]
    assert reports[0]["window"] == reports[1]["window"] == 8  # 2 steps x 2 ranks x 2 rollouts
    for step in ("step_000001", "step_000002"):
        assert len(read_trajectories(out / "iterations" / step / "trajectories.parquet")) == 4  # both ranks'


@pytest.mark.slow
def test_the_logged_seal_metrics_are_the_whole_batchs_on_every_rank(tmp_path):
    """Rank 0 replays the ground truth (passes), rank 1 is the random model (fails): each rank's logged
    seal/success_rate is the whole batch's 50%, not its own 100% or 0%, and equals the recorded iteration's."""
    from seal_hub.models import build_tiny_model

    model_dir = build_tiny_model(tmp_path / "tiny")
    out = tmp_path / "run"
    script = Path(__file__).parent / "scripts" / "two_process_train.py"
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", str(script)]
    result = subprocess.run(
        [*command, str(out), str(model_dir), "oracle-on-rank-0"],
        capture_output=True,
        text=True,
        timeout=600,
        env=os.environ | {"OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    reports = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert reports[0]["logged"] == reports[1]["logged"] and len(reports[0]["logged"]) == 2
    for step, logged in enumerate(reports[0]["logged"], start=1):
        recorded = json.loads((out / "iterations" / f"step_{step:06d}" / "metrics.json").read_text())
        assert logged["seal/success_rate"] == pytest.approx(recorded["success_rate"]) == pytest.approx(0.5)
        assert logged["seal/mean_weight"] == pytest.approx(recorded["mean_weight"])


@pytest.mark.slow
def test_two_processes_whose_episodes_end_apart_train_in_step_with_synced_generation(tmp_path):
    """Sharded-like forwards (a collective each) and episodes of 1 step on rank 0, 3 on rank 1: the step
    finishes and both ranks end with the same rho and interface (without synced generation it hangs)."""
    from seal_hub.models import build_tiny_model

    model_dir = build_tiny_model(tmp_path / "tiny")
    out = tmp_path / "run"
    script = Path(__file__).parent / "scripts" / "two_process_synced_train.py"
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", str(script)]
    env = os.environ | {"OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [*command, str(out), str(model_dir), "1"], capture_output=True, text=True, timeout=600, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    reports = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["world"] for r in reports] == [2, 2] and all(r["synced"] for r in reports)
    assert reports[0]["interface"] == reports[1]["interface"] and reports[0]["rho"] == reports[1]["rho"]
    assert reports[0]["window"] == reports[1]["window"] == 4  # 1 step x 2 ranks x 2 rollouts
    trajectories = read_trajectories(out / "iterations" / "step_000001" / "trajectories.parquet")
    assert sorted(t.num_steps for t in trajectories) == [1, 1, 3, 3]  # the ranks' episodes did end apart


@pytest.mark.slow
def test_copies_of_one_prompt_on_two_ranks_draw_different_rollouts(tmp_path):
    """num_generations 4 over 2 ranks of 2 rollouts: both ranks step the same prompt, and each samples with its
    own seed (`SealTrainer.sampling_seed`), so the group's 4 rollouts are not two pairs of twins."""
    from seal_hub.models import build_tiny_model

    model_dir = build_tiny_model(tmp_path / "tiny")
    out = tmp_path / "run"
    script = Path(__file__).parent / "scripts" / "two_process_train.py"
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", str(script)]
    command += [str(out), str(model_dir), "one-prompt-on-both-ranks"]
    env = os.environ | {"OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    trajectories = read_trajectories(out / "iterations" / "step_000001" / "trajectories.parquet")
    assert len(trajectories) == 4 and len({t.task_id for t in trajectories}) == 1  # one prompt, both ranks
    first, second = trajectories[:2], trajectories[2:]  # gathered rank by rank
    assert [t.token_ids for t in first] != [t.token_ids for t in second]
    assert len({tuple(t.token_ids) for t in trajectories}) == 4


@pytest.mark.slow
def test_two_processes_under_dynamic_sampling_make_the_same_draws_and_train_equal_counts(tmp_path):
    """filter with extra draws and the frontier over tasks that pass, fail or pass half the time, on 2 ranks: both
    ranks make the same draws (the plan is made from the gathered groups), hand TRL the same number of slots each
    step, and between them train the plan's groups; the records hold every group drawn, both ranks'."""
    from seal_hub.models import build_tiny_model

    model_dir = build_tiny_model(tmp_path / "tiny")
    out = tmp_path / "run"
    script = Path(__file__).parent / "scripts" / "two_process_train.py"
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", str(script)]
    command += [str(out), str(model_dir), "dynamic-sampling"]
    env = os.environ | {"OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    reports = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert reports[0]["logged"] == reports[1]["logged"]  # the same plan, logged as seal/groups/... on both
    assert reports[0]["interface"] == reports[1]["interface"] and reports[0]["rho"] == reports[1]["rho"]
    extra_draws = kept = 0
    for step, (mine, theirs) in enumerate(zip(reports[0]["slots"], reports[1]["slots"], strict=True), start=1):
        assert mine["count"] == theirs["count"] == 2  # one group of 2 rollouts per rank
        groups = json.loads((out / "iterations" / f"step_{step:06d}" / "metrics.json").read_text())["groups"]
        assert (mine["trained"] + theirs["trained"]) // 2 == groups["trained"]
        assert len(read_trajectories(out / "iterations" / f"step_{step:06d}" / "trajectories.parquet")) == (
            2 * groups["drawn"]
        )
        extra_draws += groups["draws"] - 1
        kept += groups["kept"]
    assert extra_draws > 0 and kept > 0, "no extra draw, or nothing kept: the test would prove little"
