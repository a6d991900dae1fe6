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

Also: a rank that raises after training ends the launch non-zero (the clean exit of every rank, the training script's
last line, is reached only on success); one rank SIGKILLed in the middle of a step (`seal_hub._kill_points` with
SEAL_HUB_KILL_RANK) ends the launch non-zero within seconds (torchrun's agent stops the other rank) without touching
what was written, and a relaunch ends where an uninterrupted run does; and the memory estimate's ZeRO-3 parts per rank
against the bytes of DeepSpeed's partitions in a real run. These launch `tests/helpers/zero3_probe.py`, the training
script plus a per-rank report of the loop state, the rollouts gathered and the partitions held.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from helpers.run_checks import git, registry_repos, tags
from helpers.zero3_probe import PROBE_ENV, SHAPED_ENV, rollouts_digest

from seal_hub.rollout.records import read_trajectories

ROOT = Path(__file__).resolve().parents[1]
LOOP = ROOT / "tests" / "configs" / "loop_cpu.yaml"  # 2 tasks, 2 rollouts per prompt, 1 prompt per rank and step
RUN = "test/zero3"
PROBE = ROOT / "tests" / "helpers" / "zero3_probe.py"  # the training script, writing each rank's state when it ends


def zero3_config(path: Path, port: int) -> Path:
    """recipes/accelerate/zero3.yaml with two processes and no mixed precision (a CPU has no bf16 autocast here)."""
    config = yaml.safe_load((ROOT / "recipes" / "accelerate" / "zero3.yaml").read_text())
    config |= {"num_processes": 2, "mixed_precision": "no", "main_process_port": port}
    path.write_text(yaml.safe_dump(config))
    return path


def launch(config: Path, model: Path, out: Path, registry: Path, steps: int, *flags: str, **options):
    """`accelerate launch` of the training script; options: `probe` (a folder: run tests/helpers/zero3_probe.py, which
    writes each rank's state there), `env` (more variables), `timeout` (seconds, default 1200)."""
    probe, timeout = options.pop("probe", None), options.pop("timeout", 1200)
    script = [str(PROBE)] if probe is not None else ["-m", "seal_hub.scripts.seal"]
    command = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(config), *script]
    command += ["--config", str(LOOP), "--model_name_or_path", str(model)]
    command += ["--output_dir", str(out), "--max_steps", str(steps), "--publish_run", RUN, *flags]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEAL_HUB_KILL", PROBE_ENV))}
    env |= {"OMP_NUM_THREADS": "1", "SEAL_HUB_REGISTRY": str(registry), "HF_HUB_OFFLINE": "1"}
    env |= {PROBE_ENV: str(probe)} if probe is not None else {}
    env |= options.pop("env", {})
    assert not options, options
    # a session of its own: a launch that outlives its timeout is killed whole (launcher and both ranks)
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=out.parent,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"the launch did not end within {timeout} s (a hang); stderr tail:\n{stderr[-3000:]}")
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


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


@pytest.mark.slow
def test_zero3_launch_whose_rank_raises_after_training_exits_non_zero(tmp_path):
    """The other side of the clean exit (docs/reliability.md): rank 1 raises where training has ended (`save`, the
    final model not yet saved, the process group not yet destroyed) while rank 0 goes on into the save's
    collective. The launch must end non-zero, with the rank's exception in its output."""
    pytest.importorskip("deepspeed")
    from seal_hub.models import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny")
    config = zero3_config(tmp_path / "zero3.yaml", 29670)
    env = {"SEAL_HUB_KILL_AT": "save", "SEAL_HUB_KILL_RANK": "1", "SEAL_HUB_KILL_HOW": "raise"}
    failed = launch(config, model, tmp_path / "run", tmp_path / "registry", 1, env=env, timeout=900)
    assert failed.returncode != 0, "a launch whose rank raised exited 0"
    assert "KillPointError: SEAL_HUB_KILL_AT=save" in failed.stderr


def complete_checkpoints(out: Path) -> list[int]:
    from seal_hub.training.run_records import is_complete

    return sorted(int(p.name.split("-")[1]) for p in out.glob("checkpoint-*") if is_complete(p))


def ranks(probe: Path) -> list[dict]:
    return [json.loads((probe / f"rank{r}.json").read_text()) for r in (0, 1)]


def recorded(out: Path, step: int) -> str:
    """The digest of an iteration's rollouts as the run's records hold them (`zero3_probe.rollouts_digest`)."""
    return rollouts_digest(read_trajectories(out / "iterations" / f"step_{step:06d}" / "trajectories.parquet"))


def adapter(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(folder / "adapter_model.safetensors")


@pytest.mark.slow
def test_zero3_one_rank_killed_mid_step_ends_the_launch_and_a_relaunch_resumes(tmp_path):
    """Rank 1 alone is SIGKILLed inside step 2 (its rollouts gathered, its update not run: `update`, with
    SEAL_HUB_KILL_RANK=1); rank 0 is then inside a ZeRO-3 collective that can never complete. The launch must end
    (torchrun's agent sees a worker die and stops the group), non-zero, leaving checkpoint-1, step 1's records
    and the registry as they were; the relaunch resumes from checkpoint-1 and ends where an uninterrupted run
    ends: the same rollouts in every iteration, the same loop state on both ranks, the same weights, each version
    published once. Every launch trains on the probe's shaped reward, so that each step changes the weights."""
    pytest.importorskip("deepspeed")
    from seal_hub.models import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny")
    config = zero3_config(tmp_path / "zero3.yaml", 29650)
    # one learning rate whatever max_steps a launch is given; 4 tasks, 2 steps an epoch: the kill and the resume
    # fall inside the first epoch (resumes in later epochs: tests/test_trainer.py and tests/test_sampler.py)
    flags = ("--lr_scheduler_type", "constant", "--num_train_tasks", "4")

    def run(folder: Path, steps: int, probe: str, **env: str):
        env |= {SHAPED_ENV: "1"}
        return launch(config, model, folder / "run", folder / "registry", steps, *flags, probe=folder / probe, env=env)

    reference = tmp_path / "reference"
    reference.mkdir()
    done = run(reference, 2, "probe")
    assert done.returncode == 0, done.stderr[-3000:]

    out, registry, marker = tmp_path / "run", tmp_path / "registry", tmp_path / "killed-at"
    done = run(tmp_path, 1, "probe-first")
    assert done.returncode == 0, done.stderr[-3000:]
    kept = {k: v for k, v in digests(out).items() if k.startswith(("checkpoint-1/", "iterations/", "interfaces/"))}
    refs = {repo.name: git(repo, "for-each-ref") for repo in registry_repos(registry)}

    kill = {"SEAL_HUB_KILL_AT": "update:1", "SEAL_HUB_KILL_RANK": "1", "SEAL_HUB_KILL_MARKER": str(marker)}
    began = time.monotonic()
    killed = run(tmp_path, 2, "probe-killed", **kill)  # this launch's 1st update: step 2's
    took = time.monotonic() - began
    assert marker.is_file() and marker.read_text() == "update:1", "rank 1 was not killed at step 2's update"
    after_kill = time.time() - marker.stat().st_mtime  # the marker is written just before the SIGKILL
    print(f"killed launch: exit code {killed.returncode} after {took:.0f} s, {after_kill:.1f} s after the kill")
    assert killed.returncode != 0, f"a launch that lost a rank exited 0: {killed.stderr[-3000:]}"
    assert not (tmp_path / "probe-killed").exists(), "a rank of the killed launch finished training"
    # nothing written before the kill is lost or changed: the checkpoint, step 1's records, interfaces, registry
    assert complete_checkpoints(out) == [1]
    now = digests(out)
    assert {k: now.get(k) for k in kept} == kept
    assert {repo.name: git(repo, "for-each-ref") for repo in registry_repos(registry)} == refs
    for repo in registry_repos(registry):
        git(repo, "fsck", "--strict", "--no-progress")

    resumed = run(tmp_path, 2, "probe")  # resumes from checkpoint-1
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert complete_checkpoints(out) == [1, 2]
    finished = ("checkpoint-1/", "iterations/step_000001")
    now = digests(out)
    assert {k: now.get(k) for k in kept if k.startswith(finished)} == {
        k: v for k, v in kept.items() if k.startswith(finished)
    }, "the relaunch rewrote what the first launch finished"
    rank0, rank1 = ranks(tmp_path / "probe")
    assert rank0["global_step"] == rank1["global_step"] == 2
    assert list(rank0["steps"]) == ["2"], "the relaunch did not resume at step 2"
    # every rank holds the same loop state and saw the same rollouts, the ones the records hold
    assert rank0["loop"] == rank1["loop"]
    assert rank0["steps"] == rank1["steps"] == {"2": recorded(out, 2)}
    # as the uninterrupted run: the same rollouts in each iteration, rho, window and environment versions, the same
    # interfaces (but for the time each was made) and the same weights, which the steps did change
    assert [recorded(out, k) for k in (1, 2)] == [recorded(reference / "run", k) for k in (1, 2)]
    for theirs in ranks(reference / "probe"):
        assert without_times(theirs["loop"]) == without_times(rank0["loop"])
    for version in rank0["loop"]["interface_versions"]:
        ours, theirs = (
            json.loads((o / "interfaces" / f"{version}.json").read_text()) for o in (out, reference / "run")
        )
        assert without_times({"interface": ours}) == without_times({"interface": theirs}), version
    final, uninterrupted = adapter(out / "checkpoint-2"), adapter(reference / "run" / "checkpoint-2")
    assert final.keys() == uninterrupted.keys()
    assert all(torch_allclose(final[k], uninterrupted[k]) for k in final)
    before = adapter(out / "checkpoint-1")
    assert not all(torch_allclose(final[k], before[k]) for k in final), "step 2 changed no weight"
    # each version published once, by the main process alone
    assert tags(registry, "dataset", f"{RUN}-trajectories") == ["iter-1", "iter-2"]
    assert tags(registry, "model", f"{RUN}-adapter") == ["iter-1", "iter-2"]
    assert resumed.stdout.count("published: ") == 1
    for repo in registry_repos(registry):
        git(repo, "fsck", "--strict", "--no-progress")


def without_times(loop: dict) -> dict:
    """A loop state without its interface's `created_at` (when a run made it, not what it is)."""
    interface = {k: v for k, v in loop["interface"].items() if k != "created_at"}
    return loop | {"interface": interface}


def torch_allclose(a, b) -> bool:
    import torch

    return bool(torch.allclose(a, b, rtol=0, atol=1e-6))


@pytest.mark.slow
@pytest.mark.parametrize("lora", [True, False], ids=["lora", "full"])
def test_zero3_memory_estimate_matches_what_each_rank_holds(tmp_path, lora):
    """`seal-hub estimate`'s ZeRO-3 figures per GPU against the bytes each rank of a real ZeRO-3 run holds after
    a step (`zero3_probe.zero3_bytes`): parameter partitions, gradient partitions, optimizer state, and the
    parameters ZeRO-3 keeps whole on every rank (its persistent ones); each within 0.8-1.25x. The estimate is for
    the same config, model and world size (tests/configs/loop_cpu.yaml, the tiny model's config.json, zero3.yaml
    with two processes)."""
    pytest.importorskip("deepspeed")
    from seal_hub.estimate.parts import trainable, weights
    from seal_hub.estimate.plan import load_plan
    from seal_hub.estimate.shapes import shape_from_config
    from seal_hub.models import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny")
    config = zero3_config(tmp_path / "zero3.yaml", 29660 + lora)
    probe, out = tmp_path / "probe", tmp_path / "run"
    # no checkpoint, no publishing (a full fine-tune has no adapter to publish: publish_iteration refuses it)
    flags = ["--save_strategy", "no", "--publish_run", "", *([] if lora else ["--use_peft", "false"])]
    done = launch(config, model, out, tmp_path / "registry", 1, *flags, probe=probe)
    assert done.returncode == 0, done.stderr[-3000:]

    plan = load_plan(LOOP, accelerate_config=config)
    plan = plan if lora else dataclasses.replace(plan, use_peft=False)
    assert (plan.launch.num_processes, plan.launch.zero_stage) == (2, 3)
    shape = shape_from_config(json.loads((model / "config.json").read_text()))
    estimated = {p.name: p.bytes for p in [*weights(shape, plan), *trainable(shape, plan)]}
    expected = {
        "parameter partitions": estimated["weights"] + estimated.get("LoRA parameters", 0.0),
        "gradient partitions": estimated["gradients"],
        "optimizer state": estimated["optimizer state"],
        "persistent whole": estimated["ZeRO-3 persistent params"],
    }
    lines, ratios = [], {}
    for rank, report in enumerate(ranks(probe)):
        held = report["zero3"]
        measured = {
            "parameter partitions": held["frozen_partitions"] + held["trainable_partitions"],
            "gradient partitions": held["gradient_partitions"],
            "optimizer state": held["optimizer_moments"] + held["fp32_master_copies"],
            "persistent whole": held["persistent_whole"],  # parameters DeepSpeed keeps gathered
        }
        for part, value in measured.items():
            ratios[rank, part] = expected[part] / value
            lines.append(
                f"rank {rank} {part:<21} estimate {expected[part]:>10.0f} B  measured {value:>10} B  "
                f"ratio {ratios[rank, part]:.3f}x"
            )
    print(("LoRA" if lora else "full fine-tune") + " under ZeRO-3, 2 ranks:\n" + "\n".join(lines))
    assert all(0.8 <= r <= 1.25 for r in ratios.values()), ratios
