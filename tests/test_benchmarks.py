"""Every script in benchmarks/ runs, at a smoke test's size, in the default suite: a change that breaks one fails
here, not months later when someone runs the benchmark. Each smoke run uses the script's own small-size flags (tiny
model, a task or two, a few tokens: seconds each on the CPU) and must end with the line the script promises (its
ratio against its named baseline); the numbers are not checked, since a smoke run times nothing worth comparing.

The scripts checked elsewhere in the default suite are named with the test file that runs them (`ELSEWHERE`), and
the modules that are no scripts (imported by the scripts and the tests) in `MODULES`; `gpu_bundle.py` downloads from
PyPI, so here only its options parse (`HELP_ONLY`). A new file in benchmarks/ that is in none of these fails
`test_every_benchmark_file_is_smoke_run_or_named`.

Not covered: the real runs (minutes to hours; run them by hand, their figures are in docs/benchmarks.md) and the GPU
runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from helpers.extras import require_bfcl
from helpers.paths import ROOT

BENCHMARKS = ROOT / "benchmarks"
NUMBER = r"-?\d+\.\d\d"
# script -> (its smoke-size flags, the last line it must end with)
SMOKE = {
    "cpu_dtype.py": (
        ["--model", "tiny", "--tasks", "2", "--conversations", "1", "--max_new_tokens", "8"],
        rf"evaluation time, bf16 / fp32: {NUMBER}x",
    ),
    "decode_attention.py": (
        ["--rows", "6", "--layers", "2", "--min-length", "8", "--max-length", "300", "--repeats", "1", "--room", "8"],
        rf"decode attention, one padded call / buckets: {NUMBER}x",
    ),
    "demo_step.py": (["--smoke", "--steps", "2"], rf"loss forward\+backward, shared prompt / TRL: {NUMBER}x"),
    "env_throughput.py": (["--tasks", "4", "--passes", "1"], rf"env speedup vs bfcl-eval: {NUMBER}x"),
    "eval_throughput.py": (
        ["--per-category", "1", "--max-new-tokens", "8", "--max_live_episodes", "4"],
        rf"eval speedup batched vs sequential: {NUMBER}x",
    ),
    "memory_estimate.py": (["--smoke"], rf"memory estimate / measured: {NUMBER}x"),
    "rollout_memory.py": (
        ["--model", "tiny", "--live", "4", "--max-new-tokens", "8", "--max-steps-per-turn", "2"],
        rf"rollout memory / kv size: {NUMBER}x",
    ),
    "rollout_throughput.py": (
        ["--tasks", "1", "--generations", "2", "--max-new-tokens", "8", "--skip", "generate_batch", "sequential"],
        rf"rollout tokens/s, ours / transformers: {NUMBER}x",
    ),
    "seal_overhead.py": (["--quick"], rf"seal step time / vanilla: {NUMBER}x"),
    "space_load.py": (
        ["--episodes", "20", "--tasks", "1", "--repeats", "1"],
        r"space load: \d+\.\d\d s for 20 episodes",
    ),
    "space_visitors.py": (
        ["--browsers", "2", "--live", "1", "--steps", "1", "--rounds", "1", "--live-steps", "1", "--adapters", "1"],
        r"space load test: 3 visitors, \d+ errors, p95 \S+ s, peak RSS \d+ MB",
    ),
}
# script -> why only its --help runs here (its parts are tested on their own)
HELP_ONLY = {
    "gpu_bundle.py": "its run downloads every pin from PyPI (tests/test_gpu_bundle.py: its parts offline, the whole "
    "build in a slow test)",
}
# script -> the test file whose default-suite tests run it end to end
ELSEWHERE = {
    "gpu_check.py": "test_gpu_check.py",  # --dry-run, with and without the optional packages
    "gpu_bundle_install.py": "test_gpu_bundle.py",  # installs fake bundles; refuses damaged ones
}
# modules, not scripts: what the scripts (and the tests) import
MODULES = {"baselines.py", "local_server.py", "gpu_check_server.py"}


def test_every_benchmark_file_is_smoke_run_or_named():
    scripts = {path.name for path in BENCHMARKS.glob("*.py")}
    named = set(SMOKE) | set(ELSEWHERE) | set(HELP_ONLY) | MODULES
    assert scripts == named, "a benchmark script without a smoke run: add it to SMOKE"
    for name in MODULES:
        assert '__name__ == "__main__"' not in (BENCHMARKS / name).read_text(), f"{name} is a script: smoke-run it"
    for name, test in ELSEWHERE.items():
        assert name in (ROOT / "tests" / test).read_text(), f"{test} no longer runs {name}"


@pytest.mark.parametrize("script", sorted(SMOKE))
def test_the_script_runs_to_its_last_line_at_smoke_size(script, tmp_path):
    require_bfcl()  # the smoke runs step BFCL suites
    flags, last = SMOKE[script]
    env = os.environ | {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    env |= {"SEAL_HUB_CACHE": os.environ.get("SEAL_HUB_CACHE", str(tmp_path / "cache")), "TMPDIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *flags],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert lines and re.fullmatch(last, lines[-1]), (lines[-5:], done.stderr[-3000:])


@pytest.mark.parametrize("script", sorted(HELP_ONLY))
def test_the_script_parses_its_options(script):
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("usage: "), done.stderr[-2000:]
