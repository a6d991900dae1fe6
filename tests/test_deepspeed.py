"""SEAL under a real sharding engine: DeepSpeed ZeRO-3 through `accelerate launch`, two CPU processes (slow; needs
the `deepspeed` extra).

DeepSpeed 0.19.8's CPU accelerator runs its collectives over gloo where oneCCL's bindings are absent (this machine),
and accelerate 1.15 starts the two processes with its DeepSpeed launcher (torchrun), so the run is the multi-GPU
code path with the parameters really partitioned: each rank's checkpoint holds its own shard
(`global_stepN/zero_pp_rank_R_*`). Checked, with the parameters gathered for generation (the default) and left
sharded (`ds3_gather_for_generation: false`, the ranks' forwards in step): both ranks' rollouts in every iteration
record, a held-out evaluation during training (every rank generates, the main one writes it), a checkpoint per
step, a relaunch with a larger `max_steps` that resumes from the last one without touching what the first launch
wrote, and each registry version published once.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from run_checks import tags

from seal_hub.rollout.records import read_trajectories

ROOT = Path(__file__).resolve().parents[1]
LOOP = ROOT / "tests" / "configs" / "loop_cpu.yaml"  # 2 tasks, 2 rollouts per prompt, 1 prompt per rank and step
RUN = "test/zero3"


def zero3_config(path: Path, port: int) -> Path:
    """recipes/accelerate/zero3.yaml with two processes and no mixed precision (a CPU has no bf16 autocast here)."""
    config = yaml.safe_load((ROOT / "recipes" / "accelerate" / "zero3.yaml").read_text())
    config |= {"num_processes": 2, "mixed_precision": "no", "main_process_port": port}
    path.write_text(yaml.safe_dump(config))
    return path


def launch(config: Path, model: Path, out: Path, registry: Path, steps: int, *flags: str):
    command = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(config)]
    command += ["-m", "seal_hub.scripts.seal", "--config", str(LOOP), "--model_name_or_path", str(model)]
    command += ["--output_dir", str(out), "--max_steps", str(steps), "--publish_run", RUN, *flags]
    env = os.environ | {"OMP_NUM_THREADS": "1", "SEAL_HUB_REGISTRY": str(registry), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(command, capture_output=True, text=True, timeout=1200, env=env, cwd=out.parent)


def digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in folder.rglob("*")
        if p.is_file()
    }


@pytest.mark.slow
@pytest.mark.parametrize("gather", [True, False], ids=["gathered", "sharded"])
def test_zero3_trains_seal_in_two_processes_checkpoints_and_resumes(tmp_path, gather):
    pytest.importorskip("deepspeed")
    from seal_hub.models import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny")
    config = zero3_config(tmp_path / "zero3.yaml", 29640 + gather)
    out, registry = tmp_path / "run", tmp_path / "registry"
    flags = [] if gather else ["--ds3_gather_for_generation", "false"]

    first = launch(config, model, out, registry, 1, *flags, "--eval_every_steps", "1", "--eval_tasks", "2")
    assert first.returncode == 0, first.stderr[-3000:]
    # the held-out evaluation after the step: every rank generates (ZeRO-3's forwards need all), the main one writes
    assert json.loads((out / "held_out" / "step_000001.json").read_text())["num_tasks"] == 2
    shards = sorted(p.name for p in (out / "checkpoint-1" / "global_step1").glob("zero_pp_rank_*_optim_states.pt"))
    assert shards == ["zero_pp_rank_0_mp_rank_00_optim_states.pt", "zero_pp_rank_1_mp_rank_00_optim_states.pt"]
    step_one = digests(out / "iterations" / "step_000001")

    second = launch(config, model, out, registry, 2, *flags)  # the relaunch resumes from checkpoint-1
    assert second.returncode == 0, second.stderr[-3000:]
    assert digests(out / "iterations" / "step_000001") == step_one, "the relaunch rewrote the first iteration"
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2"]
    for step in ("step_000001", "step_000002"):
        trajectories = read_trajectories(out / "iterations" / step / "trajectories.parquet")
        # both ranks' rollouts: one prompt each, two rollouts per prompt
        assert len(trajectories) == 4 and len({t.task_id for t in trajectories}) == 2, step
    assert tags(registry, "dataset", f"{RUN}-trajectories") == ["iter-1", "iter-2"]
    assert tags(registry, "model", f"{RUN}-adapter") == ["iter-1", "iter-2"]
    assert second.stdout.count("published: ") == 1 and first.stdout.count("published: ") == 1  # rank 0 alone
