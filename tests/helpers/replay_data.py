"""Real episodes for the replay tests: the rollout engine on BFCL tasks, the "model" a script that plays each
turn's ground-truth calls (optionally after a call with a missing argument), so the records carry tool calls,
tool errors, recovery hints of the interface in force, verdicts and diagnosis labels as a training run makes them.

`publish_scripted_run(run, registry, tokenizer_dir)` publishes two iterations (v0 and an evolved v1) to a registry
through `seal_hub.hub`, and `write_evaluation(folder, ...)` writes an evaluation directory.
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers.scripted import ScriptedBackend
from seal_hub.diagnosis.records import diagnosis_rows
from seal_hub.generation.backend import SamplingConfig
from seal_hub.interface import InterfaceSnapshot
from seal_hub.interface.evolve import evolve
from seal_hub.rollout import PolicyInfo, RolloutConfig, RolloutEngine, write_trajectories

TASKS = ("multi_turn_base_0", "multi_turn_base_1", "multi_turn_base_2")


def _calls(calls) -> str:
    return "".join(
        "<tool_call>" + json.dumps({"name": c.name, "arguments": c.arguments}) + "</tool_call>" for c in calls
    )


def scripted_episodes(suite, tokenizer, interface: InterfaceSnapshot, mistakes: bool, tasks=TASKS) -> list:
    """One rollout per task: per turn the ground-truth calls in one step, then a closing reply.

    With `mistakes`, the first turn of every task starts with its first call missing its arguments (a tool error),
    and the second task stops answering after turn 1 (its later turns fail).
    """
    plans: dict[str, list[str | None]] = {}
    for task_id in tasks:
        task = suite.task(task_id)
        plan: list[str | None] = []
        for t, truth in enumerate(task.ground_truth):
            if mistakes and t == 0 and truth:
                plan.append(_calls([type(truth[0])(name=truth[0].name, arguments={})]))
            if mistakes and task_id == tasks[1] and t >= 1:
                plan.append("I am not sure how to do that.")
                continue
            if truth:
                plan.append(_calls(truth))
            plan.append("Done: " + ", ".join(c.name for c in truth) if truth else "I cannot do that.")
        plans[task_id] = plan

    def script(session: str, index: int, request) -> str | None:
        plan = plans[session.split("#", 1)[0]]
        return plan[index] if index < len(plan) else "Done."

    config = RolloutConfig(max_context_tokens=32768, sampling=SamplingConfig(max_new_tokens=4096))
    engine = RolloutEngine(
        ScriptedBackend(tokenizer, script), tokenizer, suite, config, PolicyInfo("tiny"), interface=interface
    )
    trajectories = engine.run(suite.select(tasks))
    rows = diagnosis_rows(trajectories, [suite.diagnose(t, suite.task(t.task_id)) for t in trajectories])
    return trajectories, rows


def interfaces() -> tuple[InterfaceSnapshot, InterfaceSnapshot]:
    from helpers.profiles import PROFILE

    v0 = InterfaceSnapshot.null()
    return v0, evolve(v0, PROFILE)


def publish_scripted_run(run: str, registry, suite, tokenizer) -> dict:
    """Iteration 0 under v0 with mistakes, iteration 1 under v1 without; returns what was published."""
    from seal_hub.hub import RunRepos, publish_interface, publish_trajectories

    repos = RunRepos.of(run)
    published = {}
    for k, (snapshot, mistakes) in enumerate(zip(interfaces(), (True, False), strict=True)):
        trajectories, rows = scripted_episodes(suite, tokenizer, snapshot, mistakes)
        publish_interface(repos.environment, snapshot, registry=registry)
        publish_trajectories(repos.trajectories, k, trajectories, rows, registry=registry)
        published[f"iter-{k}"] = (trajectories, rows)
    return published


def write_evaluation(folder: Path, suite, tokenizer) -> tuple[list, list]:
    """An evaluation directory: trajectories.parquet and diagnoses.parquet, null interface, with mistakes."""
    from datasets import Dataset

    from seal_hub.diagnosis.records import DIAGNOSIS_FEATURES

    trajectories, rows = scripted_episodes(suite, tokenizer, InterfaceSnapshot.null(), True)
    folder.mkdir(parents=True, exist_ok=True)
    write_trajectories(trajectories, folder / "trajectories.parquet")
    Dataset.from_list(rows, features=DIAGNOSIS_FEATURES).to_parquet(str(folder / "diagnoses.parquet"))
    return trajectories, rows


_TINY: list[Path] = []


def tiny_model() -> Path:
    """The tiny model, built once per test process (its tokenizer is trained, which takes a while)."""
    import tempfile

    from seal_hub.models import build_tiny_model

    if not _TINY:
        _TINY.append(build_tiny_model(Path(tempfile.mkdtemp(prefix="seal_hub-replay-tiny-"))))
    return _TINY[0]


def replay_world(root: Path, suite, patch) -> dict:
    """A local registry under `root` holding the scripted run ``alice/demo``, an evaluation directory, and the
    environment pointing at them (through `patch`, a `pytest.MonkeyPatch`)."""
    from transformers import AutoTokenizer

    from seal_hub.hub import get_registry

    patch.setenv("SEAL_HUB_REGISTRY", str(root / "registry"))
    patch.setenv("SEAL_HUB_BACKEND", "local")
    patch.setenv("SEAL_HUB_CACHE", str(root / "cache"))
    patch.setenv("GRADIO_ANALYTICS_ENABLED", "False")
    tokenizer = AutoTokenizer.from_pretrained(tiny_model())
    published = publish_scripted_run("alice/demo", get_registry("local"), suite, tokenizer)
    evaluation = write_evaluation(root / "eval", suite, tokenizer)
    return {
        "root": root,
        "published": published,
        "evaluation": evaluation,
        "tokenizer": tokenizer,
        "tiny": tiny_model(),
    }
