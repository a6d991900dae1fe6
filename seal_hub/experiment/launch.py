"""Each arm's training as its own `accelerate launch` of the training recipe: one process tree per arm.

Why a process per arm, on every device kind: GPU memory that a colocated vLLM engine, NCCL communicators or a
DeepSpeed engine hold is given back reliably only when their process ends, so five arms trained in one process
would each start with less memory than the last; a crash of one arm's training stops the experiment with the arm
named, and the relaunch resumes it from its checkpoint. The same code path runs on a CPU, so the tests run it.

The experiment itself (`recipes/experiment.py`) is one process: it writes each arm's settings to
``OUTPUT_DIR/launch/ARM-seed-K.yaml``, runs ``accelerate launch [--config_file ACCELERATE_CONFIG] -m
seal_hub.scripts.seal --config THAT_FILE`` with the environment of a fresh shell (the variables a launcher set for
the experiment's own process are dropped), waits for it, and evaluates in its own process afterwards. A
termination of the experiment terminates the arm's launch too (no orphan keeps training into the run directory).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

LAUNCH_DIR = "launch"
# set by torchrun / accelerate launch for the process they start: an arm's own launch sets its own
LAUNCHER_VARIABLES = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "GROUP_WORLD_SIZE",
    "ROLE_RANK",
    "ROLE_NAME",
    "ROLE_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
)
LAUNCHER_PREFIXES = ("TORCHELASTIC_", "ACCELERATE_", "FSDP_")
KEPT = ("ACCELERATE_LOG_LEVEL",)  # a user's own setting, not the launcher's


class ArmFailed(RuntimeError):
    """An arm's training process exited with an error; the message names the arm, the status and the command."""


def launched_processes() -> int:
    """How many processes a launcher started for this one (1 when it runs alone)."""
    try:
        return int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return 1


def child_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """`environ` (default: this process's) without what a launcher set for this process."""
    environ = dict(os.environ if environ is None else environ)
    return {
        key: value
        for key, value in environ.items()
        if key in KEPT or not (key in LAUNCHER_VARIABLES or key.startswith(LAUNCHER_PREFIXES))
    }


def arm_command(settings_file: Path, accelerate_config: str | None) -> list[str]:
    """The command that trains one arm: `accelerate launch` of the packaged recipe on its settings file."""
    command = [sys.executable, "-m", "accelerate.commands.launch"]
    if accelerate_config:
        command += ["--config_file", accelerate_config]
    return [*command, "-m", "seal_hub.scripts.seal", "--config", str(settings_file)]


def write_settings(output_dir: str | Path, name: str, settings: dict[str, Any]) -> Path:
    """The arm's recipe settings as a YAML config, ``OUTPUT_DIR/launch/NAME.yaml`` (rewritten at each launch)."""
    from seal_hub.atomic import write_text

    path = Path(output_dir) / LAUNCH_DIR / f"{name}.yaml"
    write_text(path, yaml.safe_dump(settings, sort_keys=True))
    return path


def launch_arm(
    name: str,
    settings: dict[str, Any],
    output_dir: str | Path,
    accelerate_config: str | None,
    log: Callable[[str], None] = print,
    run: Callable[..., int] | None = None,
) -> None:
    """Train one arm in its own `accelerate launch` and wait for it; `ArmFailed` if it exits with an error.
    `run(command, env)` replaces the subprocess (tests)."""
    if accelerate_config and not Path(accelerate_config).is_file():
        raise ArmFailed(f"accelerate_config {accelerate_config}: no such file (an `accelerate launch` config)")
    command = arm_command(write_settings(output_dir, name, settings), accelerate_config)
    log(f"experiment: {' '.join(command[1:])}")
    sys.stdout.flush()
    status = (run or _run)(command, child_environment())
    if status != 0:
        raise ArmFailed(
            f"{name}: training exited with status {status} (its output is above); the relaunch resumes it from "
            f"its last checkpoint. Command: {' '.join(command)}"
        )


def _run(command: list[str], env: dict[str, str]) -> int:
    """Run `command`, its output on this process's; a SIGTERM or Ctrl-C here terminates it and every process it
    started (its own process group: `accelerate launch` does not pass a signal on to the processes it runs)."""
    process = subprocess.Popen(command, env=env, start_new_session=True)
    previous = signal.getsignal(signal.SIGTERM)

    def terminate(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminate)
    try:
        return process.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)
        if process.poll() is None:  # interrupted: the arm's launch goes with the experiment
            _signal_group(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                _signal_group(process.pid, signal.SIGKILL)
                process.wait()


def _signal_group(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone
        os.killpg(pid, signum)
