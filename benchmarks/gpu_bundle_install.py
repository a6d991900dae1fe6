"""Install a wheel bundle made by `gpu_bundle.py` on the machine it was made for, offline, into a venv.

    python3 benchmarks/gpu_bundle_install.py gpu-bundle --venv /tmp/seal-gpu --checkout .   # benchmarks/gpu_run.sh
    /tmp/seal-gpu/bin/python benchmarks/gpu_check.py --require

The bundle is a folder of parts (``part-1``, ``part-2``, ...), each at most one call's worth of files, each
holding the same ``manifest.json``: for every wheel its file name, size and sha256, whether it is always installed
or only where the machine's own copy fails what the bundle asks of it ("if-needed"), and the pieces it travels in
(one piece, or the byte chunks of a wheel bigger than a part, each with its part, size and sha256). Installing:

1. every piece is looked for and checked (size, sha256); a missing part or a bad checksum is one line naming it,
   exit status 3, and nothing is installed; so is a bundle whose seal_hub wheel was built from other sources than
   the checkout given with ``--checkout`` (the GPU would run stale code);
2. the chunks are joined and each whole wheel is checked against its own sha256;
3. a venv is made (from the interpreter running this, the machine's own python3) with no pip and no system
   site-packages, and a ``.pth`` file in it names the site-packages that interpreter sees: the venv sees exactly
   the machine's packages (its torch, transformers, peft, ...), with what the bundle installs in front of them.
   A plain ``venv --system-site-packages`` would not do: where the machine's python3 is itself a venv (as on the
   lent GPU machine) it would see the base interpreter's packages, not that venv's;
4. the wheels are installed with the machine's own pip, run by the venv's interpreter: ``--no-index --no-deps``,
   pip's config files and PIP_* settings ignored;
5. what each installed wheel declares (Requires-Dist, markers evaluated here) is compared with what the venv
   sees, one ``note:`` line per unmet requirement: the bundle was planned against a description of the machine,
   and this is the machine. Notes do not fail the install; the GPU check that follows is the judge.

Standard library only, plus `packaging` (the machine's own, or the one pip vendors). Not covered: Windows paths,
installing anywhere but a fresh venv.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import venv
import zipfile
from pathlib import Path

MANIFEST = "manifest.json"
PTH = "_machine_site_packages.pth"  # the venv's view of the machine's own packages
BLOCK = 1 << 20
CACHES = {"__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis"}  # never travel, never in a wheel


class BundleError(Exception):
    """What is wrong with the bundle or the target, in one line that says what to do."""


def canonical(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(BLOCK):
            digest.update(block)
    return digest.hexdigest()


def sources_digest(checkout: Path) -> str:
    """sha256 over seal_hub's sources in `checkout` (pyproject.toml and seal_hub/, caches left out): which code
    the bundle's seal_hub wheel was built from."""
    digest = hashlib.sha256()
    files = [checkout / "pyproject.toml", *sorted((checkout / "seal_hub").rglob("*"))]
    for path in files:
        if path.is_file() and not CACHES & set(path.parts) and path.suffix != ".pyc":
            digest.update(path.relative_to(checkout).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def read_manifest(bundle: Path) -> dict:
    """The manifest of the first part found in `bundle` (every part holds the same one)."""
    parts = sorted(p for p in bundle.glob("part-*") if (p / MANIFEST).is_file()) if bundle.is_dir() else []
    if not parts:
        raise BundleError(f"{bundle} holds no part of a bundle (no {bundle}/part-N/{MANIFEST}): carry its parts")
    return json.loads((parts[0] / MANIFEST).read_text())


def check_pieces(bundle: Path, manifest: dict) -> None:
    """Every piece of every wheel is in its part with its size and sha256; else one `BundleError` naming it."""
    missing_parts = sorted(
        {piece["part"] for wheel in manifest["wheels"] for piece in wheel["pieces"]}
        - {p.name for p in bundle.iterdir() if p.is_dir()}
    )
    if missing_parts:
        names = ", ".join(f"{bundle.name}/{part}" for part in missing_parts)
        raise BundleError(f"{names} missing (of {manifest['parts']} parts): carry it in this call or the one before")
    for wheel in manifest["wheels"]:
        for piece in wheel["pieces"]:
            path = bundle / piece["part"] / piece["file"]
            shown = f"{bundle.name}/{piece['part']}/{piece['file']}"
            if not path.is_file():
                raise BundleError(f"{shown} missing from its part: rebuild the bundle and carry it again")
            if path.stat().st_size != piece["size"] or sha256(path) != piece["sha256"]:
                raise BundleError(f"{shown} is damaged (size or sha256 differs from the manifest): carry it again")


def join_wheels(bundle: Path, manifest: dict, into: Path) -> dict[str, Path]:
    """Each wheel whole in `into` (chunks joined in order), checked against its sha256; file name -> path."""
    wheels = {}
    for wheel in manifest["wheels"]:
        target = into / wheel["file"]
        with target.open("wb") as out:
            for piece in wheel["pieces"]:
                with (bundle / piece["part"] / piece["file"]).open("rb") as source:
                    shutil.copyfileobj(source, out, BLOCK)
        if sha256(target) != wheel["sha256"]:
            raise BundleError(
                f"{wheel['file']} joined from its chunks does not match its sha256: carry the parts again"
            )
        wheels[wheel["file"]] = target
    return wheels


def make_venv(path: Path) -> tuple[Path, list[str]]:
    """A fresh venv at `path` that also sees this interpreter's site-packages; its python and its sys.path dirs."""
    if path.exists() and not (path / "pyvenv.cfg").is_file():
        raise BundleError(f"{path} exists and is not a venv: remove it or give another --venv")
    venv.EnvBuilder(clear=True, with_pip=False, symlinks=os.name != "nt").create(path)
    site = Path(sysconfig.get_path("purelib", "venv", vars={"base": str(path), "platbase": str(path)}))
    machine = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]
    (site / PTH).write_text("".join(f"{p}\n" for p in machine))
    return path / "bin" / "python", [str(site), *machine]


def visible(paths: list[str]) -> dict[str, str]:
    """Distribution name -> version, as an interpreter with `paths` on sys.path finds them (the first one wins)."""
    found: dict[str, str] = {}
    for dist in importlib.metadata.distributions(path=paths):
        name = dist.metadata["Name"]
        if name:
            found.setdefault(canonical(name), dist.version)
    return found


def _packaging():
    try:
        from packaging.markers import default_environment
        from packaging.requirements import Requirement
        from packaging.version import Version
    except ImportError:  # the machine has pip, which carries its own copy
        from pip._vendor.packaging.markers import default_environment
        from pip._vendor.packaging.requirements import Requirement
        from pip._vendor.packaging.version import Version
    return Requirement, Version, default_environment


def requirements(wheel: Path, environment: dict[str, str]) -> list:
    """The Requires-Dist entries of `wheel` that apply in `environment` (no extras)."""
    Requirement, _, _ = _packaging()
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
        metadata = archive.read(name).decode("utf-8")
    declared = [
        Requirement(line.split(":", 1)[1].strip())
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:")
    ]
    env = dict(environment, extra="")
    return [r for r in declared if r.marker is None or r.marker.evaluate(env)]


def unmet(needs: dict[str, list], found: dict[str, str]) -> list[str]:
    """'who asks name spec, found version' for each requirement (of `needs`: who -> requirements) `found` fails."""
    _, Version, _ = _packaging()

    def parse(version: str):
        try:
            return Version(version)
        except ValueError:  # not a PEP 440 version (InvalidVersion is a ValueError): fails every specifier
            return version

    lines = []
    for who, reqs in needs.items():
        for req in reqs:
            have = found.get(canonical(req.name))
            if have is None:
                lines.append(f"{who} asks {req.name}{req.specifier}, not installed")
            elif not req.specifier.contains(parse(have), prereleases=True):
                lines.append(f"{who} asks {req.name}{req.specifier}, found {have}")
    return lines


def install(bundle: Path, venv_path: Path, checkout: Path | None = None) -> Path:
    """Check, join and install `bundle` into a fresh venv at `venv_path`; returns the venv's python.

    With `checkout`, the bundle's seal_hub must have been built from that checkout's sources (else the GPU would
    run other code than the checkout holds)."""
    manifest = read_manifest(bundle)
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if manifest["python"] != here:
        raise BundleError(
            f"the bundle is for Python {manifest['python']}, this is {here}: build it with --python {here}"
        )
    if checkout is not None and manifest.get("seal_hub_sources") != sources_digest(checkout):
        raise BundleError(
            f"the bundle's seal_hub was built from other sources than {checkout}: rebuild it "
            "(python benchmarks/gpu_bundle.py) and carry it again"
        )
    check_pieces(bundle, manifest)
    _, _, default_environment = _packaging()
    environment = default_environment()
    python, paths = make_venv(venv_path)
    with tempfile.TemporaryDirectory(prefix="gpu-bundle-") as staging:
        wheels = join_wheels(bundle, manifest, Path(staging))
        declared = {
            f"{w['name']} {w['version']}": requirements(wheels[w["file"]], environment)
            for w in manifest["wheels"]
            if w["checked"]
        }
        before = visible(paths)
        chosen, kept = [], []
        for wheel in manifest["wheels"]:
            on_name = {
                who: [r for r in reqs if canonical(r.name) == canonical(wheel["name"])]
                for who, reqs in declared.items()
            }
            if wheel["install"] == "if-needed" and canonical(wheel["name"]) in before and not unmet(on_name, before):
                kept.append(f"{wheel['name']} {before[canonical(wheel['name'])]}")
            else:
                chosen.append(str(wheels[wheel["file"]]))
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}  # no index, links or constraints
        env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INPUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
        command = [str(python), "-m", "pip", "install", "--no-index", "--no-deps", "--no-cache-dir", "-q", *chosen]
        result = subprocess.run(command, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            last = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise BundleError(f"pip could not install the bundle into {venv_path}: {last}")
    for line in unmet(declared, visible(paths)):
        print(f"note: {line}")
    kept_text = f"; kept the machine's own {', '.join(kept)}" if kept else ""
    print(f"gpu_bundle: installed {len(chosen)} wheels into {venv_path}{kept_text}")
    return python


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Install a gpu_bundle.py bundle into a fresh venv, offline.")
    parser.add_argument("bundle", type=Path, help="the bundle's folder (holding part-1, part-2, ...)")
    parser.add_argument("--venv", type=Path, required=True, help="where to make the venv (remade if it is one)")
    parser.add_argument(
        "--checkout", type=Path, help="refuse a bundle whose seal_hub wheel was built from other sources than these"
    )
    args = parser.parse_args(argv)
    try:
        install(args.bundle, args.venv, args.checkout)
    except BundleError as error:
        print(f"gpu_bundle: {error}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
