"""Replay Space load time: opening an iteration of 1,000 recorded episodes and showing one of them.

The episodes are synthetic copies of real trajectory records: the tiny random policy (`seal_hub.models.tiny`) is
rolled out by the rollout engine on a few BFCL tasks (real prompts, token ids, log-probabilities, verdicts and
diagnosis labels), and those records are repeated with new rollout indices up to `--episodes`. They are published
as one iteration to a temporary local registry with `seal_hub.hub.publish_trajectories`, as a training run does.

Measured, each from a fresh `seal_hub.replay.Viewer` given the BFCL suite loaded once beforehand (`add_suite`: a Space
process loads it once, on its first replay, and keeps it; loading its 800 tasks takes longer than the open itself, so
a Viewer left to load it would time the suite, not the Space): open the run, list the iteration's episodes with their
labels, render the first episode as chat and what the agent was shown. Baseline, in the same run: the same iteration
read the straightforward way, with `seal_hub.hub.load_trajectories` (`datasets.load_dataset`) and `from_rows` into
`Trajectory` records.
Last line exactly: `space load: X.XX s for N episodes` (the first, coldest open). Measured (2 shared CPU cores,
defaults): viewer opens 0.048, 0.027, 0.030 s; baseline 3.65, 4.42, 3.62 s; `space load: 0.05 s for 1000 episodes`.

    python benchmarks/space_load.py [--episodes 1000] [--tasks 4] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path


def real_records(root: Path, tasks: int):
    """Rollouts of the tiny policy on the `tasks` shortest-prompt training tasks, with their diagnosis rows."""
    from seal_hub.diagnosis.records import diagnosis_rows
    from seal_hub.envs.bfcl import BfclSuite
    from seal_hub.generation import SamplingConfig, build_hf_backend
    from seal_hub.models import PolicyConfig, build_tiny_model, load_policy
    from seal_hub.rollout import PolicyInfo, RolloutConfig, RolloutEngine

    suite = BfclSuite()
    model, tokenizer = load_policy(PolicyConfig(model_name_or_path=str(build_tiny_model(root / "tiny"))))
    backend = build_hf_backend(model, tokenizer)
    config = RolloutConfig(num_generations=2, sampling=SamplingConfig(max_new_tokens=16))
    engine = RolloutEngine(backend, tokenizer, suite, config, PolicyInfo("tiny"))
    chosen = [suite.task(f"multi_turn_base_{k}") for k in range(tasks)]
    trajectories = engine.run(chosen)
    rows = diagnosis_rows(trajectories, [suite.diagnose(t, suite.task(t.task_id)) for t in trajectories])
    return suite, trajectories, rows


def synthetic_iteration(trajectories, rows, episodes: int):
    """`episodes` copies of the real records, each (task, rollout) pair unique."""
    out, out_rows = [], []
    for i in range(episodes):
        source, row = trajectories[i % len(trajectories)], rows[i % len(rows)]
        index = i // len(trajectories) * 2 + source.rollout_index
        out.append(source.model_copy(update={"rollout_index": index}))
        out_rows.append(row | {"rollout_index": index})
    return out, out_rows


def open_and_show(suite) -> tuple[float, int, int]:
    from seal_hub.replay import Selection, Viewer

    viewer = Viewer()
    viewer.add_suite(suite)  # loaded once beforehand; a fresh Viewer would load its 800 tasks inside the timing
    start = time.perf_counter()
    browse = viewer.browse(Selection(run="local://bench/space"))
    replay = viewer.replay(browse.selection)
    seconds = time.perf_counter() - start
    assert replay.messages and replay.shown_markdown
    # The open must have used the shared suite: a Viewer loading its own (BFCL's 800 tasks, ~0.4 s) inside the
    # timing measures the suite, not the Space (what a dead `viewer._suite = suite` once did, unnoticed).
    assert viewer.loaded_suites == (suite.name,), f"the timed open loaded suite(s) {viewer.loaded_suites}"
    return seconds, browse.episodes, len(replay.view.messages)


def baseline() -> tuple[float, int]:
    from seal_hub.hub import load_trajectories
    from seal_hub.rollout.records import from_rows

    start = time.perf_counter()
    records = from_rows(load_trajectories("local://bench/space-trajectories").to_list())
    load_trajectories("local://bench/space-trajectories", "diagnoses").to_list()
    return time.perf_counter() - start, len(records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--tasks", type=int, default=4, help="BFCL tasks the tiny policy really plays")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="seal_hub-space-bench-"))
    os.environ["SEAL_HUB_REGISTRY"] = str(root / "registry")
    os.environ["HF_DATASETS_CACHE"] = str(root / "datasets-cache")
    from seal_hub.hub import get_registry, publish_trajectories

    suite, trajectories, rows = real_records(root, args.tasks)
    episodes, episode_rows = synthetic_iteration(trajectories, rows, args.episodes)
    tokens = sum(len(t.token_ids) for t in episodes)
    publish_trajectories("bench/space-trajectories", 0, episodes, episode_rows, registry=get_registry("local"))
    print(
        f"episodes: {len(episodes)} (copies of {len(trajectories)} real tiny-policy rollouts on {args.tasks} tasks), "
        f"{tokens} tokens in all"
    )

    opens = []
    for n in range(args.repeats):
        seconds, count, messages = open_and_show(suite)
        opens.append(seconds)
        print(
            f"viewer   open {n + 1}: {seconds:6.3f} s  ({count} episodes listed, first shown as {messages} messages)"
        )
    bases = []
    for n in range(args.repeats):
        seconds, count = baseline()
        bases.append(seconds)
        print(f"baseline open {n + 1}: {seconds:6.3f} s  ({count} records via load_trajectories + from_rows)")
    ratio = statistics.median(bases) / statistics.median(opens)
    print(f"speedup vs load_trajectories + from_rows (medians): {ratio:.2f}x")
    print(f"space load: {opens[0]:.2f} s for {len(episodes)} episodes")


if __name__ == "__main__":
    main()
