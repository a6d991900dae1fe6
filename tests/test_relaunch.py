"""Relaunching the recipe on a finished run changes nothing and says so; a larger budget continues the run.

The run's budget (1 step) ends inside an epoch (2 tasks, one per step), the case where transformers' resumed
loop would take one more step before it tests max_steps."""

from __future__ import annotations

import pytest
from helpers.extras import require_bfcl
from helpers.paths import ROOT
from helpers.recipes import parse, recipe_module
from helpers.run_checks import check_run, fingerprint

RUN = "test/relaunch"
DEMO = ROOT / "tests" / "configs" / "loop_cpu.yaml"  # the multi-turn loop at a test's size


def launch(tiny, out, max_steps: int, monkeypatch) -> None:
    flags = ["--model_name_or_path", str(tiny), "--output_dir", str(out), "--max_steps", str(max_steps)]
    flags += ["--num_train_tasks", "2", "--per_device_train_batch_size", "2", "--num_generations", "2"]
    flags += ["--max_new_tokens", "8", "--publish_run", RUN, "--disable_tqdm", "true"]
    recipe_module().main(*parse(DEMO, *flags, monkeypatch=monkeypatch))


@pytest.fixture
def registry(tmp_path, monkeypatch):
    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(tmp_path / "registry"))
    return tmp_path / "registry"


def test_relaunching_a_finished_run_changes_nothing_and_a_larger_budget_continues(
    tmp_path, registry, monkeypatch, capsys
):
    require_bfcl()  # its suite is BFCL's
    from seal_hub.models import build_tiny_model

    tiny, out = build_tiny_model(tmp_path / "tiny"), tmp_path / "run"
    launch(tiny, out, 1, monkeypatch)
    check_run(out, registry, RUN, steps=1, group=2)
    before = fingerprint(out, registry)
    capsys.readouterr()

    launch(tiny, out, 1, monkeypatch)
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed == [
        f"SEAL run {out} is already complete at step 1 (max_steps 1): nothing to train; to extend it, relaunch "
        "with a larger --max_steps (e.g. --max_steps 2)"
    ]
    assert fingerprint(out, registry) == before
    check_run(out, registry, RUN, steps=1, group=2)

    launch(tiny, out, 2, monkeypatch)
    assert "SEAL run summary" in capsys.readouterr().out
    check_run(out, registry, RUN, steps=2, group=2)
    kept = {path: value for path, value in fingerprint(out, registry).items() if path in before}
    assert {p: v for p, v in kept.items() if "step_000001" in p} == {
        p: v for p, v in before.items() if "step_000001" in p
    }  # step 1's records were not made again
