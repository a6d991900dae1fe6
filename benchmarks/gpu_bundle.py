"""Build the wheel bundle that lets benchmarks/gpu_check.py run whole on a lent GPU machine, which has no network.

    python benchmarks/gpu_bundle.py                                  # gpu-bundle/part-N for the lent machine
    python benchmarks/gpu_bundle.py --python 3.11 --present FREEZE   # for another target (what the tests build)

The lent machine (described in `gpu_bundle_device.txt` beside this file) has Python 3.12 with torch 2.11,
transformers 5.17, peft, accelerate, huggingface_hub 1.33, numpy 2.5, pyarrow, pandas and more, but no TRL,
datasets, bfcl-eval, bitsandbytes or pydantic, and takes at most 64 MiB of files per call. This script downloads
from PyPI, for the target's Python on manylinux x86_64, the wheels of `PINS` the target needs, builds seal_hub's
own wheel from this checkout, and lays them out in parts of at most ``--part-size`` MiB (a wheel bigger than a
part travels as byte chunks), each part with the manifest that `gpu_bundle_install.py` checks and installs from.

What goes in, for each pin: a package the target lacks, or holds at a version that fails what the bundled wheels
declare (Requires-Dist), goes in and is always installed; one the target holds at a version that passes stays
out; one it holds at a version the description does not know goes in as "if-needed" (installed there only where
the machine's own copy fails) when its wheel is under 1 MiB, and otherwise stays out and is checked at install.
Every wheel is installed with ``--no-deps``; instead, the build fails if a bundled wheel declares a package that
is neither bundled nor on the target. Two wheels' declarations are not followed: bfcl-eval's (it pins numpy
1.26.4, which would replace the machine's numpy 2.5, and declares the SDKs of many model providers; the SEAL step
imports only its multi-turn API classes, function docs, prompts and type mappings, which need only pydantic
beyond the machine's packages: the bundle test runs the whole check in a venv without the rest) and seal_hub's
(exact pins of the development stack, transformers 5.23 and huggingface_hub 2.4 among them: the point is to run
seal_hub under the machine's versions).

Not covered: platforms other than manylinux x86_64, sdist-only pins (every pin has a wheel on PyPI).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

if str(Path(__file__).resolve().parent) not in sys.path:  # imported from elsewhere than a run of this script
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_bundle_install import (  # noqa: E402
    CACHES,
    MANIFEST,
    BundleError,
    canonical,
    check_pieces,
    requirements,
    sha256,
    sources_digest,
    unmet,
)

ROOT = Path(__file__).resolve().parents[1]
DEVICE = Path(__file__).with_name("gpu_bundle_device.txt")
MIB = 1 << 20
SMALL = 1 * MIB  # an "if-needed" wheel costs at most this much of the call's 64 MiB
RESERVE = 64 << 10  # of each part, for its manifest
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"]
UNCHECKED = {"bfcl-eval", "seal-hub"}  # declarations not followed (module docstring)
# what the check imports beyond torch, transformers, peft and accelerate (and what those bring): pyproject.toml's
# pins where it has one; python-dateutil, six and fsspec at what the development venv runs
PINS = {
    "trl": ("1.16.0", "the SEAL step: SealTrainer is TRL's GRPOTrainer"),
    "datasets": ("5.2.0", "TRL's trainer and seal_hub's records"),
    "dill": ("0.4.1", "datasets"),
    "multiprocess": ("0.70.19", "datasets"),
    "xxhash": ("4.1.0", "datasets"),
    "fsspec": ("2026.9.0", "datasets, which caps it at 2026.9.0"),
    "pyarrow": ("24.0.0", "datasets (at least 24) and TRL"),
    "pandas": ("3.0.6", "TRL, datasets and seal_hub's records"),
    "python-dateutil": ("2.9.0.post0", "pandas"),
    "six": ("1.17.0", "python-dateutil"),
    "pydantic": ("2.14.3", "seal_hub's typed records and bfcl-eval's"),
    "pydantic-core": ("2.50.4", "pydantic"),
    "annotated-types": ("0.8.0", "pydantic"),
    "typing-inspection": ("0.4.5", "pydantic"),
    "typing-extensions": ("4.16.0", "pydantic (at least 4.16)"),
    "bfcl-eval": ("2026.3.23", "the BFCL suite: its API classes, function docs and prompts"),
    "bitsandbytes": ("0.50.2", "the QLoRA step's 4-bit NF4 layers"),
}


@dataclass
class Wheel:
    name: str
    version: str
    path: Path
    why: str
    install: str = "always"  # or "if-needed"
    reason: str = ""  # why it is in the bundle


def read_present(path: Path) -> dict[str, str | None]:
    """A target's packages from a `pip freeze`-like file: name -> version (None where the line gives none)."""
    present: dict[str, str | None] = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        name, _, version = line.partition("==")
        present[canonical(name.split("@")[0].strip())] = version.strip() or None
    return present


def target_environment(python: str) -> dict[str, str]:
    """Marker values of CPython `python` on Linux x86_64."""
    return {
        "python_version": python,
        "python_full_version": f"{python}.0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "x86_64",
        "os_name": "posix",
    }


def download(python: str, into: Path) -> dict[str, Path]:
    """Every pin's wheel for `python` on manylinux x86_64, from PyPI; canonical name -> file."""
    tag = python.replace(".", "")
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", str(into)]
    command += ["--python-version", python, "--implementation", "cp", "--abi", f"cp{tag}", "--abi", "abi3", *platforms]
    command += [f"{name}=={version}" for name, (version, _) in PINS.items()]
    subprocess.run(command, check=True)
    files = {}
    for file in into.glob("*.whl"):
        files[canonical(file.name.split("-")[0])] = file
    absent = [name for name in PINS if canonical(name) not in files]
    if absent:
        raise BundleError(f"pip downloaded no wheel of {', '.join(absent)} for Python {python}")
    return files


def build_seal_hub(into: Path) -> Path:
    """seal_hub's wheel, built from a copy of what its build reads (the checkout keeps no build/ folder)."""
    with tempfile.TemporaryDirectory(prefix="seal-hub-src-") as source:
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(ROOT / name, source)
        shutil.copytree(ROOT / "seal_hub", Path(source) / "seal_hub", ignore=shutil.ignore_patterns(*CACHES, "*.pyc"))
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(into), source], check=True)
    return next(into.glob("seal_hub-*.whl"))


def plan(
    files: dict[str, Path], present: dict[str, str | None], environment: dict[str, str]
) -> tuple[list[Wheel], dict[str, str]]:
    """Which pins go in and how (module docstring), and why each other pin stays out: (bundled, name -> why out).

    Decided to a fixed point: a wheel that stays out declares nothing (the target's own copy is used), which can
    let another stay out too."""
    declared = {
        name: requirements(files[canonical(name)], environment) for name in PINS if canonical(name) not in UNCHECKED
    }
    inside = set(PINS)
    while True:
        needs = {f"{n} {PINS[n][0]}": declared[n] for n in inside if n in declared}
        bundled, out = [], {}
        for name, (version, why) in PINS.items():
            on_name = {who: [r for r in reqs if canonical(r.name) == canonical(name)] for who, reqs in needs.items()}
            wheel = Wheel(name, version, files[canonical(name)], why)
            have = present.get(canonical(name))
            if canonical(name) not in present:
                wheel.reason = "not on the target"
            elif have is not None:
                failing = unmet(on_name, {canonical(name): have})
                if not failing:
                    out[name] = f"the target's {have} passes what the bundle asks"
                    continue
                wheel.reason = f"the target has {have}: {failing[0]}"
            elif wheel.path.stat().st_size <= SMALL:
                wheel.install, wheel.reason = "if-needed", "the target's version is not known"
            else:
                out[name] = "on the target at a version not known here; checked at install"
                continue
            bundled.append(wheel)
        if {w.name for w in bundled} == inside:
            return bundled, out
        inside = {w.name for w in bundled}


def check_closure(bundled: list[Wheel], present: dict[str, str | None], environment: dict[str, str]) -> None:
    """Every package a followed wheel declares is bundled or on the target; else a `BundleError` naming it."""
    have = {canonical(w.name) for w in bundled} | set(present)
    for wheel in bundled:
        if canonical(wheel.name) in UNCHECKED:
            continue
        for req in requirements(wheel.path, environment):
            if canonical(req.name) not in have:
                raise BundleError(f"{wheel.name} declares {req}, neither pinned nor on the target: add it to PINS")


def layout(wheels: list[Wheel], out: Path, part_size: int) -> list[dict]:
    """Write the wheels into parts of at most `part_size` bytes (first fit, largest first); the manifest's entries."""
    room_size = part_size - RESERVE  # each part's room for wheels: its manifest's kept
    if room_size < MIB:
        raise BundleError(f"a part of {part_size / MIB:.2f} MiB is too small: give at least 2 MiB")
    items = []  # (size, wheel, chunk index or None, offset)
    for wheel in wheels:
        size = wheel.path.stat().st_size
        if size <= room_size:
            items.append((size, wheel, None, 0))
        else:
            for index, offset in enumerate(range(0, size, room_size)):
                items.append((min(room_size, size - offset), wheel, index, offset))
    items.sort(key=lambda item: -item[0])
    room: list[int] = []  # bytes left in each part
    pieces: dict[str, list[dict]] = {w.name: [] for w in wheels}
    for size, wheel, index, offset in items:
        part = next((i for i, left in enumerate(room) if left >= size), None)
        if part is None:
            room.append(room_size)
            part = len(room) - 1
        room[part] -= size
        folder = out / f"part-{part + 1}"
        folder.mkdir(parents=True, exist_ok=True)
        name = wheel.path.name if index is None else f"{wheel.path.name}.{index:03d}"
        with wheel.path.open("rb") as source, (folder / name).open("wb") as target:
            source.seek(offset)
            target.write(source.read(size))
        pieces[wheel.name].append({"part": folder.name, "file": name, "size": size, "sha256": sha256(folder / name)})
    entries = []
    for wheel in wheels:
        ordered = sorted(pieces[wheel.name], key=lambda piece: piece["file"])  # chunks in their order
        entries.append(
            {
                "name": wheel.name,
                "version": wheel.version,
                "file": wheel.path.name,
                "size": wheel.path.stat().st_size,
                "sha256": sha256(wheel.path),
                "install": wheel.install,
                "checked": canonical(wheel.name) not in UNCHECKED,
                "why": f"{wheel.why}; {wheel.reason}",
                "pieces": ordered,
            }
        )
    return entries


def build(out: Path, python: str, present_file: Path, part_size: int) -> dict:
    """Download, plan, lay out and check the bundle in `out` (emptied first); returns its manifest."""
    if out.exists():
        if any(p for p in out.iterdir() if not (p.is_dir() and p.name.startswith("part-"))):
            raise BundleError(f"{out} holds more than a bundle's parts: give another output folder")
        shutil.rmtree(out)
    present = read_present(present_file)
    environment = target_environment(python)
    sources = sources_digest(ROOT)  # before the wheel is built from them
    with tempfile.TemporaryDirectory(prefix="gpu-bundle-") as staging:
        files = download(python, Path(staging))
        bundled, left_out = plan(files, present, environment)
        seal_hub = build_seal_hub(Path(staging) / "seal_hub")
        bundled.append(
            Wheel("seal-hub", seal_hub.name.split("-")[1], seal_hub, "the project itself", reason="this checkout")
        )
        check_closure(bundled, present, environment)
        entries = layout(bundled, out, part_size)
    manifest = {
        "python": python,
        "platforms": PLATFORMS,
        "target": present_file.name,
        "seal_hub_sources": sources,
        "parts": len(part_names(entries)),
        "wheels": entries,
        "left_out": left_out,
    }
    write_manifest(out, manifest)
    check_pieces(out, manifest)  # what the installer will check first
    return manifest


def write_manifest(out: Path, manifest: dict) -> None:
    """The same manifest into every part (whichever part arrives, the installer can say which one did not)."""
    text = json.dumps(manifest, indent=1) + "\n"
    if len(text.encode()) > RESERVE:
        raise BundleError(f"the manifest outgrew the {RESERVE >> 10} KiB a part keeps for it: give larger parts")
    for part in part_names(manifest["wheels"]):
        (out / part / MANIFEST).write_text(text)


def part_names(entries: list[dict]) -> list[str]:
    """The parts the manifest's `entries` use, in order (part-2 before part-10)."""
    return sorted({piece["part"] for entry in entries for piece in entry["pieces"]}, key=lambda part: int(part[5:]))


def report(out: Path, manifest: dict) -> str:
    """What each part holds, what stayed out and why, and the carry list."""
    lines = []
    for part in part_names(manifest["wheels"]):
        files = sorted((out / part).iterdir())
        lines.append(f"{out.name}/{part}: {sum(f.stat().st_size for f in files) / MIB:.1f} MiB")
        for wheel in manifest["wheels"]:
            for piece in wheel["pieces"]:
                if piece["part"] == part:
                    chunk = "" if piece["file"] == wheel["file"] else f" (chunk {piece['file'][-3:]})"
                    mode = "" if wheel["install"] == "always" else f", {wheel['install']}"
                    lines.append(
                        f"  {wheel['name']}=={wheel['version']}{chunk}  {piece['size'] / MIB:.2f} MiB{mode}  "
                        f"({wheel['why']})"
                    )
    for name, why in manifest["left_out"].items():
        lines.append(f"left out: {name}=={PINS[name][0]} ({why})")
    carry = ", ".join(f'"{out.name}/{part}"' for part in part_names(manifest["wheels"]))
    lines.append(f"gpu bundle: {manifest['parts']} part(s) for Python {manifest['python']}; carry [{carry}]")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the wheel bundle for benchmarks/gpu_check.py on a lent GPU.")
    parser.add_argument("--out", type=Path, default=ROOT / "gpu-bundle", help="the bundle's folder (git-ignored)")
    parser.add_argument("--python", default="3.12", help="the target's Python, major.minor (the lent machine: 3.12)")
    parser.add_argument(
        "--present", type=Path, default=DEVICE, help="the target's packages, one `name==version` (or `name`) a line"
    )
    parser.add_argument("--part-size", type=float, default=60.0, help="MiB per part (one call carries one part)")
    args = parser.parse_args(argv)
    if Version(args.python).release[:1] != (3,) or len(args.python.split(".")) != 2:
        parser.error("--python takes major.minor, such as 3.12")
    try:
        manifest = build(args.out.resolve(), args.python, args.present, int(args.part_size * MIB))
    except (BundleError, subprocess.CalledProcessError) as error:
        print(f"gpu_bundle: {error}", file=sys.stderr)
        return 3
    print(report(args.out.resolve(), manifest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
