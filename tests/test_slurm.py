"""The SLURM recipe (recipes/slurm/seal.sbatch: N training nodes + 1 vLLM node), without SLURM: `bash -n`, the
dry run's commands (the server's flags are the ones TRL 1.16's `trl vllm-serve` imposes, each training node's
accelerate launch parses into torchrun on that node with its own rank, and its recipe flags parse into the recipe's
configs), and the job's control flow under stand-in `srun` and `scontrol` executables: it waits for the training
nodes, ends on the first failure, and requeues itself on the time-limit signal. Not a real cluster."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "recipes" / "slurm" / "seal.sbatch"
CONFIG = "recipes/configs/qwen2.5-7b-full-server.yaml"
NODES = ["n1", "n2", "n3", "n4", "n5"]

FAKE_SRUN = """#!/usr/bin/env bash
node=""
while [[ "$1" == --* ]]; do
    [[ "$1" == --nodelist=* ]] && node="${1#--nodelist=}"
    shift
done
echo "$$ $node $*" >>"$FAKE_LOG"
for _ in $(seq 200); do  # with FAKE_STEPS: wait (10 s at most) until that many steps have started
    [[ $(wc -l <"$FAKE_LOG") -ge ${FAKE_STEPS:-0} ]] && break
    sleep 0.05
done
if [[ "$*" == *"vllm serve"* ]]; then exec sleep 60; fi
if [[ "$node" == "${FAKE_FAIL_NODE:-}" ]]; then exit 3; fi
exec sleep "${FAKE_TRAIN_SECONDS:-0}"
"""
FAKE_SCONTROL = """#!/usr/bin/env bash
if [[ "$1 $2" == "show hostnames" ]]; then printf '%s\\n' $FAKE_NODES; exit 0; fi
echo "$*" >>"$FAKE_SCONTROL_LOG"
"""


def script_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SEAL_", "VLLM_", "PUBLISH"))}
    for name in ("HF_HOME", "OUTPUT_DIR", "SHARED_DIR", "CONFIG", "ACCELERATE_CONFIG", "MODEL", "GPUS_PER_NODE"):
        env.pop(name, None)
    return env | {"SHARED_DIR": str(tmp_path / "shared")} | extra


def dry_run(tmp_path: Path, *flags: str, **extra: str) -> str:
    env = script_env(tmp_path, DRY_RUN="1", SEAL_NODES=" ".join(NODES), **extra)
    done = subprocess.run(["bash", str(SCRIPT), *flags], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def commands(output: str) -> dict[str, tuple[str, list[str]]]:
    """node -> (its label, its command's words): each command line follows a `# node NAME (label)` line."""
    lines = output.splitlines()
    found = {}
    for label, line in zip(lines, lines[1:], strict=False):
        if label.startswith("# node "):
            node, _, rest = label.removeprefix("# node ").partition(" ")
            found[node] = (rest.strip("()"), shlex.split(line))
    return found


def flag(words: list[str], name: str) -> str:
    return words[words.index(name) + 1]


def test_the_script_is_valid_bash():
    done = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_vllm_node_serves_the_policy_with_the_flags_trl_imposes(tmp_path):
    from trl.scripts.vllm_serve import ScriptArguments, build_command

    label, words = commands(dry_run(tmp_path))["n5"]
    assert label == "vLLM server"
    assert words[:4] == ["srun", "--nodes=1", "--ntasks=1", "--nodelist=n5"]
    served = words[words.index("env") :]
    assert served[:5] == ["env", "VLLM_SERVER_DEV_MODE=1", "vllm", "serve", "Qwen/Qwen2.5-7B-Instruct"]
    assert (flag(served, "--host"), flag(served, "--port")) == ("0.0.0.0", "8000")
    assert int(flag(served, "--tensor-parallel-size")) * int(flag(served, "--data-parallel-size")) == 8
    assert "--enable-prefix-caching" in served and "--enable-scale-out" in served
    assert json.loads(flag(served, "--weight-transfer-config")) == {"backend": "nccl"}
    trl = build_command(ScriptArguments(model="Qwen/Qwen2.5-7B-Instruct", enable_prefix_caching=True))
    imposed = trl[trl.index("--weight-transfer-config") :]  # TRL's own (without vLLM here: no --enable-scale-out)
    assert " ".join(imposed) in " ".join(served)
    assert "--enable-prefix-caching" in trl


def test_each_training_node_launches_with_its_rank_and_the_vllm_node_as_server_host(tmp_path):
    output = dry_run(tmp_path, "--max_steps", "600")
    found = commands(output)
    assert set(found) == set(NODES)
    for rank, node in enumerate(NODES[:-1]):
        label, words = found[node]
        assert label == f"training, machine_rank {rank}"
        assert words[:4] == ["srun", "--nodes=1", "--ntasks=1", f"--nodelist={node}"]
        assert words[4:6] == ["accelerate", "launch"]
        assert flag(words, "--machine_rank") == str(rank) and flag(words, "--main_process_ip") == "n1"
        assert (flag(words, "--num_machines"), flag(words, "--num_processes")) == ("4", "32")
        assert (flag(words, "--vllm_mode"), flag(words, "--vllm_server_host")) == ("server", "n5")
        assert flag(words, "--use_vllm") == "true" and flag(words, "--config") == CONFIG
        assert words[-2:] == ["--max_steps", "600"]  # the script's own flags go to the recipe
    code = [line for line in SCRIPT.read_text().splitlines() if not line.lstrip().startswith("#")]
    assert "--server_ip" not in output and not any("--server_ip" in line for line in code)  # TRL's example's


def test_the_accelerate_launch_runs_torchrun_on_each_node_with_its_rank(tmp_path):
    """accelerate's own parser and launch preparation: the `standard` multi-node launcher (torchrun per node),
    8 processes on each of the 4 nodes, node rank = machine rank, rendezvous on the first training node."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_deepspeed_cmd_env

    for rank, node in enumerate(NODES[:-1]):
        words = commands(dry_run(tmp_path))[node][1]
        args = launch_command_parser().parse_args(words[words.index("launch") + 1 :])
        args, _, _ = _validate_launch_command(args)
        assert args.use_deepspeed and args.deepspeed_multinode_launcher == "standard"
        args.deepspeed_fields_from_accelerate_config = ""  # set by `accelerate launch` itself before this call
        cmd, _ = prepare_deepspeed_cmd_env(args)
        assert cmd is None  # torchrun in this process, not the pdsh/ssh `deepspeed` launcher
        assert (args.nproc_per_node, args.nnodes, args.node_rank) == ("8", "4", rank)
        assert args.rdzv_endpoint == "n1:29500" and args.training_script == "recipes/seal.py"


def test_the_recipe_flags_parse_into_the_recipe_configs(tmp_path, monkeypatch):
    from dataclasses import fields

    from helpers.recipes import recipe_module

    words = commands(dry_run(tmp_path, PUBLISH_RUN="alice/seal-7b"))["n1"][1]
    recipe_flags = words[words.index("recipes/seal.py") + 1 :]
    recipe = recipe_module()
    known = {f.name for cls in recipe.make_parser().dataclass_types for f in fields(cls)}
    assert {w[2:] for w in recipe_flags if w.startswith("--")} - {"config"} <= known
    # bf16 needs the GPU this machine lacks (as tests/test_recipes.py parses the GPU configs)
    argv = ["seal.py", *recipe_flags, "--bf16", "false", "--use_cpu", "true"]
    monkeypatch.setattr(sys, "argv", argv)
    script, training, model, *_ = recipe.make_parser().parse_args_and_config()
    assert training.use_vllm and training.vllm_mode == "server" and training.vllm_server_host == "n5"
    assert (training.vllm_server_port, training.vllm_group_port) == (8000, 51216)
    assert training.output_dir == str(tmp_path / "shared" / "qwen2.5-7b-full-server")
    assert (script.publish_run, script.publish_backend) == ("alice/seal-7b", "local")
    assert model.model_name_or_path == "Qwen/Qwen2.5-7B-Instruct"
    # 64 rollouts per update on 32 GPUs, as the paper's 4 GPUs x 16 accumulated micro-batches
    assert training.per_device_train_batch_size * 32 * training.gradient_accumulation_steps == 64


def test_a_relaunch_resumes_in_the_same_output_dir_and_the_job_requeues_itself(tmp_path):
    text = SCRIPT.read_text()
    assert "#SBATCH --requeue" in text and "#SBATCH --signal=B:USR1@" in text and "trap requeue USR1" in text
    first, second = (commands(dry_run(tmp_path, SLURM_JOB_ID=job))["n1"][1] for job in ("101", "102"))
    assert flag(first, "--output_dir") == flag(second, "--output_dir")  # a requeued or new job: the same folder
    assert "SLURM_JOB_ID" not in text.split("OUTPUT_DIR=", 1)[1].splitlines()[0]
    shared = dry_run(tmp_path).splitlines()[1]
    assert f"SEAL_HUB_REGISTRY={tmp_path}/shared/registry" in shared and f"HF_HOME={tmp_path}/shared/hf" in shared


def test_too_few_nodes_and_no_nodes_are_refused_with_the_fix(tmp_path):
    env = script_env(tmp_path, DRY_RUN="1", SEAL_NODES="n1")
    done = subprocess.run(["bash", str(SCRIPT)], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 2 and "at least one training node and one vLLM node" in done.stderr
    env = script_env(tmp_path, DRY_RUN="1")
    done = subprocess.run(["bash", str(SCRIPT)], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 2 and "SEAL_NODES" in done.stderr


# ----- the job itself, with stand-ins for srun and scontrol -----


@pytest.fixture
def fake_slurm(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("srun", FAKE_SRUN), ("scontrol", FAKE_SCONTROL)):
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    env = script_env(
        tmp_path,
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        SLURM_JOB_NODELIST="n[1-3]",
        SLURM_JOB_ID="77",
        FAKE_NODES="n1 n2 n3",
        FAKE_LOG=str(tmp_path / "srun.log"),
        FAKE_SCONTROL_LOG=str(tmp_path / "scontrol.log"),
    )
    started: list[subprocess.Popen] = []

    def launch(**extra: str) -> subprocess.Popen:
        log = (tmp_path / "job.out").open("w")
        # a session of its own: the job and every stand-in step it starts share one process group
        job = subprocess.Popen(
            ["bash", str(SCRIPT)], cwd=ROOT, env=env | extra, stdout=log, stderr=log, start_new_session=True
        )
        started.append(job)
        return job

    yield launch, tmp_path
    for job in started:  # nothing of ours outlives the test: the job's process group, steps left running included
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGKILL)
        job.wait(timeout=10)


def steps(tmp_path: Path) -> list[list[str]]:
    path = tmp_path / "srun.log"
    return [line.split()[1:] for line in path.read_text().splitlines()] if path.exists() else []


def test_the_job_starts_the_server_and_every_training_node_and_ends_when_they_finish(fake_slurm):
    launch, tmp_path = fake_slurm
    job = launch(FAKE_STEPS="3")  # no step ends before all three started: the job's end cannot beat a slow start
    assert job.wait(timeout=30) == 0, (tmp_path / "job.out").read_text()
    started = steps(tmp_path)
    assert sorted(s[0] for s in started) == ["n1", "n2", "n3"]  # scontrol's node list: n3 serves vLLM
    by_node = {s[0]: s[1:] for s in started}
    assert by_node["n3"][2:4] == ["vllm", "serve"] and flag(by_node["n2"], "--machine_rank") == "1"
    assert (tmp_path / "shared" / "qwen2.5-7b-full-server").is_dir() and (tmp_path / "shared" / "registry").is_dir()


def test_a_failed_training_node_ends_the_job_with_an_error(fake_slurm):
    launch, tmp_path = fake_slurm
    job = launch(FAKE_FAIL_NODE="n2", FAKE_TRAIN_SECONDS="60")
    assert job.wait(timeout=30) == 1
    assert "a step failed" in (tmp_path / "job.out").read_text()


def test_the_time_limit_signal_requeues_the_job(fake_slurm):
    launch, tmp_path = fake_slurm
    job = launch(FAKE_TRAIN_SECONDS="60")
    deadline = time.monotonic() + 20
    while len(steps(tmp_path)) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(steps(tmp_path)) == 3
    job.send_signal(signal.SIGUSR1)  # what `#SBATCH --signal=B:USR1@600` sends ten minutes before the limit
    assert job.wait(timeout=20) == 0
    assert (tmp_path / "scontrol.log").read_text().split() == ["requeue", "77"]
