"""The package without a checkout: the wheel carries every data file the code reads (the demo config, the card
templates, the Space's app), installs into a fresh virtual environment, and there, from a folder outside any
checkout, `seal-hub space --help` answers, the demo config parses, the card templates and the Space's files are
found; (slow) `seal-hub train` trains the tiny model one step and publishes to a local registry, and
`seal-hub space` serves its page. Also: the public names of `import seal_hub` load lazily and print nothing, its
version is the metadata's, and the demo config exists once.

The fresh environment reuses this interpreter's installed dependencies through a .pth file (nothing is
downloaded), so its `seal_hub` can only come from the wheel (checked: its `__file__` is inside the venv)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml
from helpers.paths import DEMO_CONFIG, ROOT
from helpers.run_checks import check_run, git
from helpers.space_app import free_port

from seal_hub.cli import main as cli_main

PUBLIC = ("SealConfig", "SealTrainer", "BfclSuite", "load_interface", "load_trajectories", "load_adapter")
# bitsandbytes answers True on CPUs with AVX512-BF16, and then logs at import that it found no CPU 4-bit kernel; this
# makes every CPU answer so, for the test that importing seal_hub prints nothing
AVX512_BF16 = """
import importlib.abc, importlib.machinery, sys
class AsIfAvx512Bf16(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "bitsandbytes.functional":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            module.has_avx512bf16 = lambda: True
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, AsIfAvx512Bf16())
"""


def project_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


SHIPPED = {"model_cards": "seal_hub/model_cards", "spaces/replay": "seal_hub/spaces/replay"}  # pyproject's mapping


def data_files() -> list[str]:
    """Every file under seal_hub/ that is not Python source, and every file of the two top-level folders the wheel
    ships inside the package, each at its place in the wheel: what the code reads from the package."""
    found = [
        (p, str(p.relative_to(ROOT)))
        for p in (ROOT / "seal_hub").rglob("*")
        if p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    ]
    for folder, inside in SHIPPED.items():
        found += [(p, f"{inside}/{p.relative_to(ROOT / folder)}") for p in (ROOT / folder).rglob("*")]
    return sorted(name for p, name in found if p.is_file() and "__pycache__" not in p.parts)


def test_the_demo_config_is_one_file():
    """The package's demo config (the default of `seal-hub train` and recipes/seal.py) has no copy elsewhere in the
    checkout: the experiment configs name it as their base instead."""
    demo = DEMO_CONFIG.read_bytes()
    tracked = git_files()
    copies = [name for name in tracked if name.endswith((".yaml", ".yml")) and (ROOT / name).read_bytes() == demo]
    assert copies == ["seal_hub/scripts/configs/demo_cpu.yaml"]
    assert [name for name in tracked if Path(name).name == "demo_cpu.yaml"] == copies
    for name in ("experiment_cpu.yaml", "experiment_tiny.yaml"):
        base = yaml.safe_load((ROOT / "recipes" / "configs" / name).read_text())["base_config"]
        assert (ROOT / "recipes" / "configs" / base).resolve() == DEMO_CONFIG, name


def git_files() -> list[str]:
    """The files of this checkout that git tracks or would track (untracked, not ignored), as relative paths."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return sorted(name for name in listed if (ROOT / name).is_file())


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


def test_importing_seal_hub_and_every_public_name_prints_nothing():
    """No library notice on a plain import, even where bitsandbytes would log its missing CPU 4-bit kernel (made to
    happen here: `AVX512_BF16`); the environment is cleared of the variables that quiet libraries on their own."""
    import seal_hub

    names = [name for name in seal_hub.__all__ if name != "__version__"]
    code = AVX512_BF16 + f"import seal_hub\nfrom seal_hub import {', '.join(names)}\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRL_", "TRANSFORMERS_", "HF_DATASETS_DISABLE"))}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (done.stdout, done.stderr) == ("", "")


def test_the_avx512_bf16_stand_in_makes_bitsandbytes_log_its_notice():
    """The check above can fail: without seal_hub's filter, importing peft prints bitsandbytes' line."""
    done = subprocess.run([sys.executable, "-c", AVX512_BF16 + "import peft"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Failed to load CPU gemm_4bit_forward from kernels-community" in done.stderr


def test_seal_hub_train_refuses_a_bad_config_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("seal_hub.training.config.cpu_has_bf16", lambda: False)  # a CPU with them trains in bf16
    assert cli_main(["train", "--config", str(tmp_path / "missing.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("seal-hub train: error: ") and "missing.yaml" in err[0]
    assert cli_main(["train", "--bf16", "true", "--output_dir", str(tmp_path)]) == 2  # the demo config, no bf16 CPU
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("seal-hub train: error: ") and "bf16=False" in err[-1] and "Traceback" not in err


def build_wheel(tmp_path: Path) -> Path:
    """`pip wheel` of a copy of the project (an in-tree build would leave build/ and *.egg-info behind)."""
    source = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for folder in ("seal_hub", *SHIPPED):
        shutil.copytree(ROOT / folder, source / folder, ignore=ignore)
    for name in ("pyproject.toml", "setup.py", "README.md"):
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


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def test_the_wheel_holds_every_data_file_and_card_template_once(wheel):
    listed = zipfile.ZipFile(wheel).namelist()
    names = set(listed)
    assert len(listed) == len(names), "a file is in the wheel twice"
    missing = [f for f in data_files() if f not in names]
    assert not missing, f"not in the wheel (add to [tool.setuptools.package-data] in pyproject.toml): {missing}"
    for required in (
        "seal_hub/envs/bfcl/data/paper_split.json",
        "seal_hub/scripts/configs/demo_cpu.yaml",
        "seal_hub/evaluation/metric/seal_success/seal_success.py",
        "seal_hub/spaces/replay/app.py",
        "seal_hub/spaces/replay/README.md",
        "seal_hub/spaces/replay/requirements.txt",
        "seal_hub/replay/space_app.py",
    ):
        assert required in names
    assert any(n.startswith("seal_hub/report/data/") and n.endswith(".json") for n in names)
    # the card templates and the Space's files once each: top-level in the tree, inside the package in the wheel
    card_names = {"adapter.md", "model.md", "dataset.md", "environment.md", "evaluation.md"}
    cards = [n for n in listed if n.rsplit("/", 1)[-1] in card_names]
    assert sorted(cards) == sorted(f"seal_hub/model_cards/{name}" for name in card_names)
    assert [n for n in listed if n.endswith("/app.py") and "replay" in n] == ["seal_hub/spaces/replay/app.py"]
    assert [n for n in listed if n.endswith("space_app.py")] == ["seal_hub/replay/space_app.py"]
    assert not [n for n in listed if n.startswith(("model_cards/", "spaces/"))], "shipped inside the package only"
    assert not [n for n in names if ".data/" in n], "everything the code reads is package data, none data-files"


def test_the_card_templates_and_the_space_repository_are_in_the_tree_once():
    """One copy in the tree: the top-level folders, none left inside the package (the wheel maps them there)."""
    tracked = git_files()
    templates = [n for n in tracked if n.startswith(("model_cards/", "seal_hub/model_cards/")) or "templates/" in n]
    assert templates == [
        f"model_cards/{kind}.md" for kind in ("adapter", "dataset", "environment", "evaluation", "model")
    ]
    assert [n for n in tracked if n.rsplit("/", 1)[-1] in ("app.py", "requirements.txt") and "replay" in n] == [
        "spaces/replay/app.py",
        "spaces/replay/requirements.txt",
    ]


# run in the wheel's venv, outside any checkout: the demo config through the recipe's parser, the card templates, the
# Space's files, and where each came from
FROM_THE_WHEEL = """
import seal_hub
from seal_hub.hub.cards import template
from seal_hub.replay.deploy import space_template
from seal_hub.shipped import MODEL_CARDS, shipped
from seal_hub.scripts.seal import DEFAULT_CONFIG, make_parser, with_default_config
args = make_parser().parse_args_and_config(with_default_config(["--output_dir", "out"]))
script, training, model, tasks, warmup = args
print(seal_hub.__file__)
print(DEFAULT_CONFIG)
print(tasks.suite, model.model_name_or_path, training.max_steps, training.use_cpu)
print(space_template())
print(all(template(kind).startswith("---") for kind in ("adapter", "model", "dataset", "environment", "evaluation")))
print(shipped(MODEL_CARDS, "adapter.md"))
"""


def wheel_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return env | {
        "SEAL_HUB_REGISTRY": str(tmp_path / "registry"),
        "HF_HUB_OFFLINE": "1",
        "TRL_EXPERIMENTAL_SILENCE": "1",
    }


def installed(tmp_path: Path, wheel: Path) -> tuple[Path, Path, dict[str, str]]:
    """The wheel in a fresh venv; a working folder outside any checkout; the environment to run it in."""
    venv = fresh_venv(tmp_path, wheel)
    work = tmp_path / "elsewhere"  # no checkout here or on the path
    work.mkdir()
    return venv, work, wheel_env(tmp_path)


def test_a_wheel_install_finds_its_data_and_answers_seal_hub_space_help_without_a_checkout(tmp_path, wheel):
    venv, work, env = installed(tmp_path, wheel)
    helped = subprocess.run(
        [str(venv / "bin" / "seal-hub"), "space", "--help"], cwd=work, env=env, capture_output=True, text=True
    )
    assert helped.returncode == 0, helped.stderr[-2000:]
    assert "--run" in helped.stdout and "--public" in helped.stdout and "deploy" in helped.stdout
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", FROM_THE_WHEEL], cwd=work, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    package, config, settings, space, templates, cards = done.stdout.strip().splitlines()
    assert Path(package).is_relative_to(venv) and Path(config).is_relative_to(venv)
    assert Path(config).read_bytes() == DEMO_CONFIG.read_bytes()
    assert settings == "bfcl-single HuggingFaceTB/SmolLM2-135M-Instruct 3 True"  # the demo's own settings
    assert Path(space).is_relative_to(venv) and (Path(space) / "app.py").is_file()
    assert (Path(space) / "app.py").read_bytes() == (ROOT / "spaces" / "replay" / "app.py").read_bytes()
    assert templates == "True" and Path(cards).is_relative_to(venv) and Path(cards).name == "model_cards"
    # `seal-hub space` serves the Space repository's app from the wheel, with no run given (an empty registry)
    port = free_port()
    server = subprocess.Popen(
        [str(venv / "bin" / "seal-hub"), "space", "--port", str(port)],
        cwd=work,
        env=env | {"GRADIO_ANALYTICS_ENABLED": "False"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        page = wait_for_page(f"http://127.0.0.1:{port}/", server)
    finally:
        server.terminate()
        output = server.communicate(timeout=60)[0]
    assert "SEAL replay" in page, output[-3000:]
    assert "serving the replay Space for the newest run of the local registry" in output


@pytest.mark.slow  # a subprocess training (the default suite keeps one: test_first_run's)
def test_a_wheel_install_trains_publishes_and_serves_the_space_without_a_checkout(tmp_path, wheel):
    from seal_hub.models import build_tiny_model

    venv, work, env = installed(tmp_path, wheel)
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
    local = (out / "README.md").read_text()  # TRL's card, written at the checkpoint, corrected
    assert "trained with SEAL" in local and str(tmp_path) not in local and "huggingface.co/None" not in local
    card = git(tmp_path / "registry" / "models" / f"{run}-adapter.git", "show", "iter-1:README.md")
    assert card.startswith("---\n") and f"{run}-trajectories" in card  # the installed card template, filled in

    port = free_port()
    server = subprocess.Popen(
        [str(venv / "bin" / "seal-hub"), "space", "--run", run, "--port", str(port)],
        cwd=work,
        env=env | {"GRADIO_ANALYTICS_ENABLED": "False"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        page = wait_for_page(f"http://127.0.0.1:{port}/", server)
    finally:
        server.terminate()
        output = server.communicate(timeout=60)[0]
    assert "SEAL replay" in page, output[-3000:]


def wait_for_page(url: str, server: subprocess.Popen, timeout: float = 300.0) -> str:
    """The page at `url` once the server answers (the server exiting first fails the test)."""
    from urllib.error import URLError
    from urllib.request import urlopen

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.poll() is None, f"seal-hub space exited with status {server.returncode}"
        try:
            with urlopen(url, timeout=5) as reply:
                return reply.read().decode("utf-8", "replace")
        except (URLError, ConnectionError):
            time.sleep(1)
    raise AssertionError(f"seal-hub space did not answer {url} within {timeout:.0f} s")


@pytest.mark.parametrize("argv", [["--config=x.yaml", "--max_steps", "2"], ["--max_steps", "2"]])
def test_the_demo_config_is_the_default_and_config_equals_works(argv):
    from seal_hub.scripts.seal import DEFAULT_CONFIG, with_default_config

    expanded = with_default_config(argv)
    assert expanded[:2] == ["--config", "x.yaml" if argv[0].startswith("--config=") else str(DEFAULT_CONFIG)]
    assert expanded[2:] == ["--max_steps", "2"] and DEFAULT_CONFIG == DEMO_CONFIG
