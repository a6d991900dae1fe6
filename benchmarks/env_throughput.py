"""Ground-truth replay throughput: our episode + verifier against bfcl-eval's own path, in one run.

(a) ours: each of the 800 BFCL multi-turn tasks replayed through a fresh `Episode` (isolated instances,
    validated direct calls, per-turn verification against the cached ground-truth trace);
(b) bfcl-eval: the same trajectories executed with `execute_multi_turn_func_call` (as its inference loop
    does) and judged by `multi_turn_checker`, each pass under a fresh model name so every pass starts from
    the initial state, as separate rollouts must.

Five passes each. Prints tasks/s for both, the first (cold: the ground-truth traces are computed then) and
later passes of ours, and the memory each retains after every pass (process RSS after `gc.collect()`, and for
bfcl-eval the API instances left in its module globals). Last line exactly:
`env speedup vs bfcl-eval: X.XXx` (tasks/s over all five passes, ours / bfcl-eval's).

    python benchmarks/env_throughput.py [--passes 5] [--tasks N]
"""

from __future__ import annotations

import argparse
import gc
import time

import psutil

from seal_hub.envs.bfcl import BfclSuite, EpisodeConfig, ground_truth_steps, replay
from seal_hub.envs.bfcl.official import official_replay, release_instances


def rss_mb() -> float:
    gc.collect()
    return psutil.Process().memory_info().rss / 2**20


def bfcl_instances() -> int:
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    return sum(1 for key in vars(multi_turn_utils) if key.endswith("_instance"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=None, help="the first N tasks only (default: all 800)")
    args = parser.parse_args()

    suite = BfclSuite()
    tasks = list(suite.tasks.values())[: args.tasks]
    trajectories = {task.id: ground_truth_steps(task) for task in tasks}
    protocol = EpisodeConfig(allow_hidden_tools=True)  # BFCL's protocol: the ground truth may call hidden tools
    print(f"tasks: {len(tasks)}  passes: {args.passes}")

    base = rss_mb()
    ours_times = []
    for n in range(args.passes):
        start = time.perf_counter()
        passed = sum(replay(suite.episode(t, protocol), trajectories[t.id]).passed for t in tasks)
        ours_times.append(time.perf_counter() - start)
        print(
            f"ours      pass {n + 1}: {len(tasks) / ours_times[-1]:8.1f} tasks/s  passed {passed}/{len(tasks)}  "
            f"retained {rss_mb() - base:7.1f} MB"
        )
    ours_retained = rss_mb() - base

    base = rss_mb()
    official_times = []
    for n in range(args.passes):
        start = time.perf_counter()
        valid = sum(official_replay(t, trajectories[t.id], f"bench_pass{n}")["valid"] for t in tasks)
        official_times.append(time.perf_counter() - start)
        print(
            f"bfcl-eval pass {n + 1}: {len(tasks) / official_times[-1]:8.1f} tasks/s  passed {valid}/{len(tasks)}  "
            f"retained {rss_mb() - base:7.1f} MB  ({bfcl_instances()} instances in its globals)"
        )
    official_retained = rss_mb() - base
    for n in range(args.passes):
        release_instances(f"bench_pass{n}")

    total = len(tasks) * args.passes
    ours_rate, official_rate = total / sum(ours_times), total / sum(official_times)
    print(
        f"ours:      {ours_rate:.1f} tasks/s over {args.passes} passes (cold pass {len(tasks) / ours_times[0]:.1f}, "
        f"warm passes {len(tasks) * (args.passes - 1) / max(sum(ours_times[1:]), 1e-9):.1f}); "
        f"retained after {args.passes} passes: {ours_retained:.1f} MB (ground-truth traces included)"
    )
    print(
        f"bfcl-eval: {official_rate:.1f} tasks/s over {args.passes} passes; "
        f"retained after {args.passes} passes: {official_retained:.1f} MB"
    )
    print(f"env speedup vs bfcl-eval: {ours_rate / official_rate:.2f}x")


if __name__ == "__main__":
    main()
