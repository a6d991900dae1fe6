"""The GPU check's wheel bundle (benchmarks/gpu_bundle.py builds it, benchmarks/gpu_bundle_install.py installs it).

Offline: parts never exceed their size, a wheel bigger than a part travels in chunks and comes back byte for byte,
a missing part or a damaged chunk is one line that names it, and which pins go in follows what the target holds.
Slow (needs PyPI): the bundle built for this machine's Python, installed as on the lent GPU machine into a venv that
sees a fresh venv holding only torch, transformers 5.17, peft, accelerate and huggingface_hub 1.33, where
`gpu_check.py --dry-run --require` then runs every part."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
MIB = 1 << 20
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
# the lent machine's base, as tests/test_gpu_check.py and docs/benchmarks.md name it (peft at pyproject.toml's pin)
BASE = ["torch==2.13.0", "transformers==5.17.0", "peft==0.21.2", "accelerate==1.15.0", "huggingface_hub==1.33.0"]


@pytest.fixture(scope="module")
def bundle_module():
    """benchmarks/gpu_bundle.py as a module (it puts benchmarks/ on sys.path for its installer half)."""
    spec = importlib.util.spec_from_file_location("gpu_bundle", BENCHMARKS / "gpu_bundle.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_bundle"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def fake_wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = (), padding: int = 0) -> Path:
    """A wheel-shaped zip: METADATA with `requires`, and `padding` random bytes (stored, so the size holds)."""
    path = folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr(f"{name.replace('-', '_')}-{version}.dist-info/METADATA", metadata)
        archive.writestr("padding.bin", os.urandom(padding))
    return path


def fake_bundle(module, tmp_path: Path, part_size: int, built_from: str = "") -> tuple[Path, list]:
    """Three fake wheels (3.5, 1.2 and 0.3 MiB) laid out in parts; `built_from`: the seal_hub sources' digest."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    wheels = [
        module.Wheel("big", "1.0", fake_wheel(folder, "big", "1.0", padding=int(3.5 * MIB)), "test"),
        module.Wheel("mid", "1.0", fake_wheel(folder, "mid", "1.0", padding=int(1.2 * MIB)), "test"),
        module.Wheel("small", "1.0", fake_wheel(folder, "small", "1.0", padding=300_000), "test"),
    ]
    out = tmp_path / "bundle"
    entries = module.layout(wheels, out, part_size)
    manifest = {"python": PYTHON, "parts": len(module.part_names(entries)), "wheels": entries}
    module.write_manifest(out, dict(manifest, seal_hub_sources=built_from))
    return out, wheels


def run_install(bundle: Path, venv: Path, *more: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(BENCHMARKS / "gpu_bundle_install.py"), str(bundle), "--venv", str(venv), *more]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_parts_hold_at_most_their_size_and_a_big_wheel_comes_back_whole(bundle_module, tmp_path):
    from gpu_bundle_install import check_pieces, join_wheels, read_manifest

    out, wheels = fake_bundle(bundle_module, tmp_path, part_size=2 * MIB)
    parts = sorted(out.iterdir())
    assert len(parts) >= 3
    for part in parts:
        assert sum(f.stat().st_size for f in part.iterdir()) <= 2 * MIB, part.name
    manifest = read_manifest(out)
    big = next(w for w in manifest["wheels"] if w["name"] == "big")
    assert len(big["pieces"]) == 2 and {p["file"][-4:] for p in big["pieces"]} == {".000", ".001"}
    check_pieces(out, manifest)
    joined = join_wheels(out, manifest, tmp_path)
    for wheel in wheels:
        digest = hashlib.sha256(joined[wheel.path.name].read_bytes()).hexdigest()
        assert digest == hashlib.sha256(wheel.path.read_bytes()).hexdigest()


def test_a_missing_part_is_one_line_that_names_it(bundle_module, tmp_path):
    out, _ = fake_bundle(bundle_module, tmp_path, part_size=2 * MIB)
    missing = sorted(out.iterdir())[1]
    for file in missing.iterdir():
        file.unlink()
    missing.rmdir()
    result = run_install(out, tmp_path / "venv")
    assert result.returncode == 3
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        f"gpu_bundle: bundle/{missing.name} missing (of 3 parts): carry it in this call or the one before"
    )
    assert not (tmp_path / "venv").exists()


def test_a_damaged_chunk_is_one_line_that_names_it(bundle_module, tmp_path):
    out, _ = fake_bundle(bundle_module, tmp_path, part_size=2 * MIB)
    chunk = next(out.glob("part-*/big-1.0-py3-none-any.whl.001"))
    data = bytearray(chunk.read_bytes())
    data[100] ^= 0xFF
    chunk.write_bytes(bytes(data))
    result = run_install(out, tmp_path / "venv")
    assert result.returncode == 3 and "Traceback" not in result.stderr
    damaged = f"bundle/{chunk.parent.name}/{chunk.name} is damaged (size or sha256 differs from the manifest)"
    assert result.stderr.strip().splitlines() == [f"gpu_bundle: {damaged}: carry it again"]


def test_a_bundle_built_from_other_sources_than_the_checkout_is_refused(bundle_module, tmp_path):
    from gpu_bundle_install import sources_digest

    checkout = tmp_path / "checkout"
    (checkout / "seal_hub" / "__pycache__").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("[project]\n")
    (checkout / "seal_hub" / "core.py").write_text("X = 1\n")
    built_from = sources_digest(checkout)
    (checkout / "seal_hub" / "__pycache__" / "core.cpython.pyc").write_bytes(b"cache")  # caches do not count
    assert sources_digest(checkout) == built_from
    out, _ = fake_bundle(bundle_module, tmp_path, part_size=2 * MIB, built_from=built_from)
    (checkout / "seal_hub" / "core.py").write_text("X = 2\n")
    result = run_install(out, tmp_path / "venv", "--checkout", str(checkout))
    assert result.returncode == 3 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"gpu_bundle: the bundle's seal_hub was built from other sources than {checkout}: rebuild it "
        "(python benchmarks/gpu_bundle.py) and carry it again"
    ]
    assert not (tmp_path / "venv").exists()


def test_what_goes_in_follows_what_the_target_holds(bundle_module, tmp_path, monkeypatch):
    pins = {"app": ("1.0", "the check"), "lib": ("2.0", "app"), "huge": ("1.0", "app"), "tool": ("1.0", "nothing")}
    files = {
        "app": fake_wheel(tmp_path, "app", "1.0", requires=("lib>=2", "huge", "extra-only; extra == 'x'")),
        "lib": fake_wheel(tmp_path, "lib", "2.0"),
        "huge": fake_wheel(tmp_path, "huge", "1.0", padding=2 * MIB),
        "tool": fake_wheel(tmp_path, "tool", "1.0", requires=("lib<1.5",)),
    }
    monkeypatch.setattr(bundle_module, "PINS", pins)
    environment = bundle_module.target_environment(PYTHON)

    def decide(present):
        bundled, out = bundle_module.plan(files, present, environment)
        return {w.name: w.install for w in bundled}, out

    # absent: always; known and passing: out; unknown: small ones if-needed, big ones out
    inside, out = decide({"lib": "2.1", "huge": None, "tool": "1.0"})
    assert inside == {"app": "always"} and set(out) == {"lib", "huge", "tool"}
    assert "passes" in out["lib"] and "checked at install" in out["huge"]
    inside, _ = decide({"lib": None, "huge": None, "tool": "1.0"})
    assert inside == {"app": "always", "lib": "if-needed"}
    # a known version that fails what a bundled wheel asks goes in; `tool` stays out, so its lib<1.5 asks nothing
    inside, _ = decide({"app": "1.0", "lib": "1.0", "huge": "1.0", "tool": "1.0"})
    assert inside == {}
    bundled, _ = bundle_module.plan(files, {"lib": "1.0", "huge": "1.0", "tool": "1.0"}, environment)
    assert [(w.name, w.reason) for w in bundled] == [
        ("app", "not on the target"),
        ("lib", "the target has 1.0: app 1.0 asks lib>=2, found 1.0"),
    ]


def test_the_lent_machine_description_has_its_base_and_lacks_what_the_check_needs(bundle_module):
    present = bundle_module.read_present(bundle_module.DEVICE)
    assert present["torch"] == "2.11.0" and present["transformers"] == "5.17.0"
    assert present["huggingface-hub"] == "1.33.0" and "peft" in present and "accelerate" in present
    assert not {"trl", "datasets", "bfcl-eval", "bitsandbytes", "pydantic"} & set(present)


@pytest.mark.slow
def test_the_bundle_installed_beside_a_bare_base_runs_the_whole_check(tmp_path):
    """As on the lent machine: `base` is its python3 (a venv holding torch, transformers, peft, accelerate), the
    bundle is installed by that interpreter into a new venv that sees it, and the check runs there."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    base = tmp_path / "base"
    subprocess.run([sys.executable, "-m", "venv", str(base)], check=True, env=env, timeout=300)
    base_python = base / "bin" / "python"
    install = [str(base_python), "-m", "pip", "install", "-q", *BASE]
    subprocess.run(install, check=True, env=env, timeout=1800)
    freeze = subprocess.run([str(base_python), "-m", "pip", "freeze"], capture_output=True, text=True, check=True)
    # the lent machine's description gives no version of these: they travel "if-needed" and stay unused
    unknown = ("typing-extensions", "fsspec")
    lines = [
        line.split("==")[0] if line.split("==")[0].lower().replace("_", "-") in unknown else line
        for line in freeze.stdout.splitlines()
    ]
    present = tmp_path / "present.txt"
    present.write_text("\n".join(lines) + "\n")

    out = tmp_path / "gpu-bundle"
    build = [sys.executable, str(BENCHMARKS / "gpu_bundle.py"), "--out", str(out), "--python", PYTHON]
    build += ["--present", str(present), "--part-size", "16"]
    built = subprocess.run(build, capture_output=True, text=True, env=env, timeout=1800)
    assert built.returncode == 0, built.stderr[-3000:]
    parts = sorted(out.iterdir())
    assert len(parts) > 1 and all(sum(f.stat().st_size for f in p.iterdir()) <= 16 * MIB for p in parts)
    assert "bitsandbytes==0.50.2 (chunk 001)" in built.stdout

    check_venv = tmp_path / "check-venv"
    installed = subprocess.run(
        [str(base_python), str(BENCHMARKS / "gpu_bundle_install.py"), str(out), "--venv", str(check_venv)]
        + ["--checkout", str(ROOT)],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    summary = installed.stdout.strip().splitlines()[-1]
    assert summary.startswith("gpu_bundle: installed ") and "typing-extensions" in summary and "fsspec" in summary
    assert "note:" not in installed.stdout
    after = subprocess.run([str(base_python), "-m", "pip", "freeze"], capture_output=True, text=True, check=True)
    assert after.stdout == freeze.stdout, "the base is left as it was"

    run_env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": "", "HF_HUB_OFFLINE": "1"}
    check = [str(check_venv / "bin" / "python"), str(BENCHMARKS / "gpu_check.py"), "--dry-run", "--require"]
    result = subprocess.run(check, capture_output=True, text=True, env=run_env, cwd=tmp_path, timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "transformers 5.17.0" in result.stdout and "absent: none" in result.stdout
    assert result.stdout.rstrip("\n").splitlines()[-1] == "gpu check: 9 of 10 parts passed"  # vLLM's part: optional
