"""The package without a checkout: the wheel carries every data file the code reads, installs into a fresh
virtual environment, and `seal-hub train` there trains the tiny model one step and publishes to a local registry.
Also the public names of `import seal_hub`, its version, and the one demo config in two places.

The fresh environment reuses this interpreter's installed dependencies through a .pth file (nothing is
downloaded), so its `seal_hub` can only come from the wheel (checked: its `__file__` is inside the venv)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
from helpers.run_checks import check_run, git

from seal_hub.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[1]
PACKAGED_DEMO = ROOT / "seal_hub" / "scripts" / "configs" / "demo_cpu.yaml"
PUBLIC = ("SealConfig", "SealTrainer", "BfclSuite", "load_interface", "load_trajectories", "load_adapter")


def project_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def data_files() -> list[str]:
    """Every file under seal_hub/ that is not Python source: what the code reads from the package."""
    return sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "seal_hub").rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    )


def test_the_demo_config_is_one_file_in_two_places():
    """recipes/configs/demo_cpu.yaml (documented) and the package's copy (the default of `seal-hub train`)."""
    assert (ROOT / "recipes" / "configs" / "demo_cpu.yaml").read_bytes() == PACKAGED_DEMO.read_bytes(), (
        "recipes/configs/demo_cpu.yaml and seal_hub/scripts/configs/demo_cpu.yaml differ: copy one onto the other"
    )


def test_the_public_names_load_lazily_and_the_version_is_the_metadata():
    code = (
        "import sys, seal_hub\n"
        "heavy = sorted(m for m in ('torch', 'trl', 'transformers', 'datasets') if m in sys.modules)\n"
        f"from seal_hub import {', '.join(PUBLIC)}\n"
        "from importlib.metadata import version\n"
        "same = seal_hub.__version__ == version('seal_hub')\n"
        "print(heavy, SealTrainer.__mro__[1].__name__, BfclSuite.__name__, same)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["[]", "GRPOTrainer", "BfclSuite", "True"]


def test_seal_hub_train_refuses_a_bad_config_in_one_line(tmp_path, capsys):
    assert cli_main(["train", "--config", str(tmp_path / "missing.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("seal-hub train: error: ") and "missing.yaml" in err[0]
    assert cli_main(["train", "--bf16", "true", "--output_dir", str(tmp_path)]) == 2  # the demo config, on a CPU
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("seal-hub train: error: ") and "bf16=False" in err[-1] and "Traceback" not in err


def build_wheel(tmp_path: Path) -> Path:
    """`pip wheel` of a copy of the project (an in-tree build would leave build/ and *.egg-info behind)."""
    source = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in ("seal_hub", "model_cards"):
        shutil.copytree(ROOT / name, source / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        (source / name).write_bytes((ROOT / name).read_bytes())
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index"]
    done = subprocess.run(
        [*command, "-w", str(tmp_path / "dist"), str(source)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("seal_hub-*.whl")
    return wheel


def fresh_venv(tmp_path: Path, wheel: Path) -> Path:
    """A new venv holding only the wheel; this interpreter's site-packages lend it the dependencies."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index"]
    done = subprocess.run([*install, str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # a path line only: the .pth files of the lent directory (an editable seal_hub) are not processed
    (Path(purelib) / "lent_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def test_the_wheel_holds_every_data_file_and_card_template(tmp_path):
    names = set(zipfile.ZipFile(build_wheel(tmp_path)).namelist())
    missing = [f for f in data_files() if f not in names]
    assert not missing, f"not in the wheel (add to [tool.setuptools.package-data] in pyproject.toml): {missing}"
    for required in (
        "seal_hub/envs/bfcl/data/paper_split.json",
        "seal_hub/scripts/configs/demo_cpu.yaml",
        "seal_hub/evaluation/metric/seal_success/seal_success.py",
    ):
        assert required in names
    assert any(n.startswith("seal_hub/report/data/") and n.endswith(".json") for n in names)
    cards = {n.rsplit("/", 1)[-1] for n in names if "/data/share/seal_hub/model_cards/" in n}
    assert cards == {p.name for p in (ROOT / "model_cards").glob("*.md")}


@pytest.mark.slow  # a subprocess training (the default suite keeps one: test_first_run's)
def test_a_wheel_install_trains_and_publishes_without_a_checkout(tmp_path):
    from seal_hub.models import build_tiny_model

    venv = fresh_venv(tmp_path, build_wheel(tmp_path))
    work = tmp_path / "elsewhere"  # no checkout here or on the path
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SEAL_HUB_CARD_TEMPLATES")}
    env |= {"SEAL_HUB_REGISTRY": str(tmp_path / "registry"), "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import seal_hub; print(seal_hub.__file__); print(seal_hub.__version__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert where.returncode == 0, where.stderr[-2000:]
    path, version = where.stdout.split()
    assert Path(path).is_relative_to(venv) and version == project_version()

    tiny, out, run = build_tiny_model(tmp_path / "tiny"), work / "run", "test/wheel-run"
    flags = ["--model_name_or_path", str(tiny), "--output_dir", "run", "--max_steps", "1", "--num_train_tasks", "1"]
    flags += ["--per_device_train_batch_size", "2", "--num_generations", "2", "--max_new_tokens", "8"]
    done = subprocess.run(
        [str(venv / "bin" / "seal-hub"), "train", *flags, "--publish_run", run],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "SEAL run summary" in done.stdout and f"published: {run}-trajectories" in done.stdout
    check_run(out, tmp_path / "registry", run, steps=1, group=2)
    assert "trained with SEAL" in (out / "README.md").read_text()  # TRL's card, written at the checkpoint
    card = git(tmp_path / "registry" / "models" / f"{run}-adapter.git", "show", "iter-1:README.md")
    assert card.startswith("---\n") and f"{run}-trajectories" in card  # the installed card template, filled in


@pytest.mark.parametrize("argv", [["--config=x.yaml", "--max_steps", "2"], ["--max_steps", "2"]])
def test_the_demo_config_is_the_default_and_config_equals_works(argv):
    from seal_hub.scripts.seal import DEFAULT_CONFIG, with_default_config

    expanded = with_default_config(argv)
    assert expanded[:2] == ["--config", "x.yaml" if argv[0].startswith("--config=") else str(DEFAULT_CONFIG)]
    assert expanded[2:] == ["--max_steps", "2"] and DEFAULT_CONFIG == PACKAGED_DEMO
