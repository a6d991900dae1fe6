"""Deploying the replay Space: a Hugging Face Space repository that shows one run, pinned to its revisions.

`deploy_space("hf://NS/NAME", "NS/RUN")` reads the run's three repositories on the Hub (``-trajectories``, ``-env``,
``-adapter``), pins the trajectories to their latest version (``iter-<k>`` tag and its commit) and records the
environment and adapter versions, then creates (or updates) the Space from the Space repository of this project
(top-level ``spaces/replay/``, shipped in the wheel: `seal_hub.shipped`): its ``app.py`` as it is; its ``README.md``
with the run's datasets and models added to the front matter and a section saying what a visitor can and cannot
run; ``replay.json`` (the run, the pinned revision, the versions it saw, ``"public": true`` and the allowlists: the
runs it may show and the live policies, see `seal_hub.replay.access.space_policies`); and the ``seal_hub`` package
itself (its Python files and data), so the Space runs exactly the code that deployed it, in deployed mode without
any flag. Where ``spaces/replay/requirements.txt`` installs seal_hub from the package index, the deployed one lists
that package's own pinned requirements (its metadata: the core and the bfcl extra), since the package travels
beside app.py. One commit per deploy; a second deploy updates the same Space.

Design choice: the Space reads the run from the Hub at the pinned tag, so later iterations published to the run
do not change what a deployed Space shows until it is deployed again. A run that exists only in the local
registry is refused with the command that copies it to the Hub.

Not covered: Space hardware, secrets and private runs (set them on the Hub).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from seal_hub.hub.registry import _REPO_ID, HubError, Ref
from seal_hub.replay.episodes import ReplayError
from seal_hub.shipped import SPACE_REPO, shipped

PACKAGE_DATA = ("*.py", "*.json")
SPACE_EXTRA = "bfcl"  # the Space shows BFCL runs' episodes with their tasks' tools


def space_template() -> Path:
    """The Space repository's folder (``spaces/replay/``: app.py, README.md, requirements.txt), from a checkout or
    from the wheel, which ships it inside the package."""
    try:
        return shipped(SPACE_REPO, "app.py")
    except FileNotFoundError as exc:
        raise ReplayError(str(exc)) from None


def package_requirements(extra: str = SPACE_EXTRA) -> list[str]:
    """The installed seal_hub's own requirements, as pinned in its metadata: the core's and `extra`'s."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement

    try:
        declared = requires("seal_hub") or []
    except PackageNotFoundError:
        raise ReplayError("seal_hub is not installed (no metadata): `pip install -e .` before deploying") from None
    pinned = []
    for text in declared:
        requirement = Requirement(text)
        if requirement.marker is None or requirement.marker.evaluate({"extra": extra}):
            requirement.marker = None
            pinned.append(str(requirement))
    return pinned


@dataclass(frozen=True)
class RunPins:
    """What a deployed Space shows: the run, its trajectories pinned at a tag/commit, the versions it knew."""

    run: str
    revision: str
    commit: str
    environment_versions: tuple[str, ...]
    adapter_versions: tuple[str, ...]
    runs: tuple[str, ...] = ()  # namespaces (NS) or runs (NS/RUN) a visitor may open
    policies: tuple[str, ...] = ("tiny",)  # live policies a visitor may run

    def config(self) -> dict[str, Any]:
        return {
            "run": f"hf://{self.run}",
            "revision": self.revision,
            "commit": self.commit,
            "environment_versions": list(self.environment_versions),
            "adapter_versions": list(self.adapter_versions),
            "public": True,
            "runs": list(self.runs),
            "policies": list(self.policies),
        }


def pin_run(run: str, runs: tuple[str, ...] = ()) -> RunPins:
    """The latest trajectories version of `run` on the Hub, the environment and adapter versions there, and the
    allowlists: `runs` (default: the run's namespace) and the live policies the run published."""
    from seal_hub.hub import HubRegistry, RunRepos
    from seal_hub.replay.access import space_policies

    ref = Ref.parse(run)
    if ref.backend == "local":
        raise ReplayError(
            f"run {run!r} is in the local registry; a Space reads the Hub: copy it first with "
            f"`seal-hub hub sync local://{ref.repo_id.split('/')[0]} hf://{ref.repo_id.split('/')[0]}`"
        )
    repos = RunRepos.of(ref.repo_id)
    registry = HubRegistry()
    if not registry.repo_exists(repos.trajectories, "dataset"):
        raise ReplayError(f"run {ref.repo_id!r}: no {repos.trajectories} on the Hub; publish the run there first")
    versions = registry.versions(repos.trajectories, "dataset")
    if ref.revision:
        chosen = next((v for v in versions if v.tag == ref.revision), None)
        if chosen is None:
            have = ", ".join(v.tag for v in versions) or "none"
            raise ReplayError(f"run {ref.repo_id!r}: no version {ref.revision!r} (versions: {have})")
    elif versions:
        chosen = versions[-1]
    else:
        raise ReplayError(f"run {ref.repo_id!r}: {repos.trajectories} has no published version")

    def tags(repo_id: str, kind: str) -> tuple[str, ...]:
        exists = registry.repo_exists(repo_id, kind)  # type: ignore[arg-type]
        return tuple(v.tag for v in registry.versions(repo_id, kind)) if exists else ()  # type: ignore[arg-type]

    return RunPins(
        ref.repo_id,
        chosen.tag,
        chosen.commit,
        tags(repos.environment, "dataset"),
        tags(repos.adapter, "model"),
        runs=tuple(runs) or (ref.repo_id.split("/")[0],),
        policies=space_policies(f"hf://{ref.repo_id}", chosen.tag),
    )


def space_readme(template: str, pins: RunPins) -> str:
    """The template README with the run's repositories in the front matter and the pin in its text."""
    _, front, body = template.split("---", 2)
    metadata = yaml.safe_load(front)
    metadata["datasets"] = [f"{pins.run}-trajectories", f"{pins.run}-env"]
    ids = (name.removeprefix("hf://").split("@", 1)[0] for name in pins.policies)
    models = [repo_id for repo_id in ids if _REPO_ID.match(repo_id)]  # Hub ids only, never a local base path
    metadata["models"] = list(dict.fromkeys(models))
    header = yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True)
    pinned = (
        f"\nThis Space shows **{pins.run}** at `{pins.revision}` (commit `{pins.commit[:12]}`); environment versions "
        f"{', '.join(pins.environment_versions) or 'none'}.\n"
    )
    return f"---\n{header}---{body.rstrip()}\n{pinned}\n{visitor_rules(pins)}"


def visitor_rules(pins: RunPins) -> str:
    """What a visitor of the deployed Space can and cannot run, as a README section."""
    runs = ", ".join(f"`{name}`" if "/" in name else f"`{name}/*`" for name in pins.runs)
    policies = "\n".join(f"  - `{name}`" for name in pins.policies)
    return (
        "## What a visitor can run here\n\n"
        f"- **Browse, replay, side by side**: runs on the Hub under {runs}, at any of their revisions.\n"
        f"- **Live**: one episode at a time per visitor, with one of these policies (chosen at deploy time):\n"
        f"{policies}\n\n"
        "A visitor cannot open a directory of this machine, a run outside that list, or any other model or adapter; "
        "long inputs are refused before use, and errors are one line without host paths. To replay anything else, "
        "serve the Space on your own machine from a seal_hub checkout: `seal-hub space --run NS/RUN`.\n"
    )


def stage_space(pins: RunPins, folder: Path) -> Path:
    """Write the Space's files for `pins` into `folder`."""
    import seal_hub

    template = space_template()
    shutil.copy2(template / "app.py", folder / "app.py")
    header = f"# seal_hub {seal_hub.__version__}'s pinned requirements (the package itself is beside app.py)\n"
    (folder / "requirements.txt").write_text(header + "\n".join(package_requirements()) + "\n", encoding="utf-8")
    readme = space_readme((template / "README.md").read_text(encoding="utf-8"), pins)
    (folder / "README.md").write_text(readme, encoding="utf-8")
    (folder / "replay.json").write_text(json.dumps(pins.config(), indent=2) + "\n", encoding="utf-8")
    package = Path(seal_hub.__file__).resolve().parent
    for pattern in PACKAGE_DATA:
        for path in package.rglob(pattern):
            if "__pycache__" in path.parts:
                continue
            target = folder / "seal_hub" / path.relative_to(package)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    return folder


def deploy_space(target: str, run: str, runs: tuple[str, ...] = ()) -> tuple[str, RunPins]:
    """Create or update the Space `target` (``hf://NS/NAME``) for `run`; returns the Space's URL and the pins."""
    from huggingface_hub import HfApi, constants
    from huggingface_hub.errors import HfHubHTTPError

    if target.startswith("local://"):
        raise ReplayError(f"{target}: a Space lives on the Hub; give hf://NS/NAME")
    repo_id = target.removeprefix("hf://").removeprefix("spaces/")
    try:
        Ref(repo_id)
    except HubError as exc:
        raise ReplayError(f"Space {target!r}: {exc}") from None
    pins = pin_run(run, runs)
    folder = Path(tempfile.mkdtemp(prefix="seal_hub-space-"))
    try:
        stage_space(pins, folder)
        api = HfApi(endpoint=(os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/"))
        try:
            url = api.create_repo(repo_id, repo_type="space", space_sdk="gradio", exist_ok=True)
            api.upload_folder(
                folder_path=str(folder),
                repo_id=repo_id,
                repo_type="space",
                commit_message=f"replay {pins.run} at {pins.revision}",
            )
        except HfHubHTTPError as exc:
            raise ReplayError(f"Space {repo_id}: the Hub refused the deploy: {str(exc).splitlines()[0]}") from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return str(url), pins
