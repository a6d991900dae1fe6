"""benchmarks/seal_overhead.py: its report (medians, so one outlier does not decide; the bookkeeping share; the
prompt tokens the interface adds; the last two lines' exact format) and, slow, a `--quick` run end to end."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "seal_overhead.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("seal_overhead", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("seal_overhead", module)  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def make_run(bench, arm: str, steps: list[float], bookkeeping: list[float], prompts: dict[str, int]):
    """A run whose every step spent `bookkeeping[i]` seconds, split evenly over all bookkeeping components."""
    components = sorted({c for _, _, c in bench.BOOKKEEPING})
    run = bench.Run(arm)
    run.step_seconds = list(steps)
    run.bookkeeping = [{c: total / len(components) for c in components} for total in bookkeeping]
    run.rollout_seconds = [0.5 * s for s in steps]
    run.prompts = [(task, length, "v1" if arm == "seal" else "v0") for task, length in prompts.items()]
    for c in components:
        run.calls[c] = len(steps)
    return run


def test_report_takes_medians_and_prints_the_two_contract_lines_last(bench, capsys):
    # one outlier step per arm: means would give 34.33 / 1.87 and a 34% bookkeeping share; medians do not move
    vanilla = [make_run(bench, "vanilla", [1.0, 2.0, 100.0], [0.01, 0.01, 0.01], {"a": 100, "b": 200})]
    seal = [make_run(bench, "seal", [3.0, 2.5, 0.1], [0.03, 0.05, 0.1], {"a": 130, "b": 250})]
    bench.report(vanilla, seal)
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "seal step time / vanilla: 1.25x"
    assert lines[-2] == "seal bookkeeping / step: 2.0%"
    added = next(line for line in lines if line.startswith("prompt tokens the interface adds:"))
    assert added.startswith("prompt tokens the interface adds: 40 per prompt on average (2 SEAL prompts, interface v1")


def test_report_refuses_when_a_bookkeeping_function_never_ran(bench):
    vanilla = [make_run(bench, "vanilla", [1.0], [0.01], {"a": 100})]
    seal = [make_run(bench, "seal", [1.0], [0.01], {"a": 110})]
    seal[0].calls["diagnosis"] = 0  # e.g. the trainer now diagnoses through another name: the hook missed it
    with pytest.raises(SystemExit, match="diagnosis was never called"):
        bench.report(vanilla, seal)


def test_the_probe_times_every_hooked_function_where_the_trainer_looks_it_up(bench):
    import inspect

    from seal_hub.interface import InterfaceSnapshot

    hooked = [(owner, name) for owner, name, _ in (*bench.BOOKKEEPING, bench.ROLLOUT)]
    originals = {(owner, name): getattr(owner, name) for owner, name in hooked}
    probe = bench.Probe("seal")
    with probe.patches():
        for (owner, name), original in originals.items():
            assert getattr(owner, name).__wrapped__ is original, f"{owner}.{name} is not wrapped"
        InterfaceSnapshot.null().render_tools([])
    assert dict(probe.run.calls) == {"interface rendering": 1}
    source = inspect.getsource(bench.trainer_module)
    for (owner, name), original in originals.items():
        assert getattr(owner, name) is original, f"{owner}.{name} was not restored"
        if inspect.ismodule(owner):  # a module function is wrapped where the trainer looks it up: it must call it
            assert re.search(rf"\b{name}\(", source), f"the trainer no longer calls {name}"


@pytest.mark.slow
def test_quick_run_ends_with_the_two_contract_lines():
    env = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=1200, env=env, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    assert re.fullmatch(r"seal step time / vanilla: \d+\.\d\dx", lines[-1])
    assert re.fullmatch(r"seal bookkeeping / step: \d+\.\d%", lines[-2])
    added = next(line for line in lines if line.startswith("prompt tokens the interface adds:"))
    assert int(re.search(r"adds: (-?\d+) per prompt", added)[1]) > 0  # the evolved interface's schema cues
