"""What a SEAL run directory and its local registry must look like, whatever happened to the run: every
iteration once with one group of rollouts, contiguous environment versions, registry tags iter-1..iter-N,
git-sound registry repositories; and a fingerprint of it all, to show that a relaunch changed nothing."""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections import Counter
from pathlib import Path

from seal_hub.rollout.records import read_trajectories


def registry_repos(registry: Path) -> list[Path]:
    return sorted(p for p in registry.glob("*s/*/*.git") if (p / "HEAD").is_file())


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", f"--git-dir={repo}", *args], capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"git {' '.join(args)} failed in {repo}: {done.stderr}"
    return done.stdout


def fingerprint(out: Path, registry: Path) -> dict[str, str]:
    """Content and modification time of every record and checkpoint file, and every registry ref."""
    found = {}
    for top in ("iterations", "interfaces", *(p.name for p in out.glob("checkpoint-*"))):
        for path in sorted((out / top).rglob("*")):
            if path.is_file():
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                found[str(path.relative_to(out))] = f"{digest} {path.stat().st_mtime_ns}"
    for repo in registry_repos(registry):
        found[str(repo.relative_to(registry))] = git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    return found


def tags(registry: Path, kind: str, repo_id: str) -> list[str]:
    repo = registry / f"{kind}s" / f"{repo_id}.git"
    listed = git(repo, "for-each-ref", "--sort=refname", "--format=%(refname:strip=2)", "refs/tags")
    return listed.split()


def check_run(out: Path, registry: Path, run: str, steps: int, group: int) -> None:
    """The invariants of a finished run of `steps` steps, `group` rollouts (one task) per step."""
    folders = sorted(p.name for p in (out / "iterations").iterdir())
    assert folders == [f"step_{k:06d}" for k in range(1, steps + 1)], folders
    assert sorted(p.name for p in out.glob("checkpoint-*")) == sorted(f"checkpoint-{k}" for k in range(1, steps + 1))
    used = set()
    for folder in folders:
        trajectories = read_trajectories(out / "iterations" / folder / "trajectories.parquet")
        assert len(trajectories) == group and len(Counter(t.task_id for t in trajectories)) == 1, folder
        metrics = json.loads((out / "iterations" / folder / "metrics.json").read_text())
        assert {t.interface_version for t in trajectories} == {metrics["interface_version"]}
        used.add(metrics["interface_version"])
    versions = sorted(int(p.stem[1:]) for p in (out / "interfaces").glob("v*.json"))
    assert versions == list(range(len(versions))), versions
    assert used <= {f"v{v}" for v in versions}
    expected = sorted(f"iter-{k}" for k in range(1, steps + 1))
    adapter_tags = tags(registry, "model", f"{run}-adapter")  # each iteration's, and the held-out scores' versions
    assert [t for t in adapter_tags if "-eval-" not in t] == expected, adapter_tags
    assert all(t.split("-eval-")[0] in expected for t in adapter_tags if "-eval-" in t), adapter_tags
    assert tags(registry, "dataset", f"{run}-trajectories") == expected
    published = sorted(int(t[1:]) for t in tags(registry, "dataset", f"{run}-env"))
    assert published == list(range(len(published))) and used <= {f"v{v}" for v in published}
    for repo in registry_repos(registry):
        git(repo, "fsck", "--strict", "--no-progress")
    final = out / "adapter_model.safetensors"
    assert final.read_bytes() == (out / f"checkpoint-{steps}" / "adapter_model.safetensors").read_bytes()
