"""The turn-label profile of perturbed ground-truth trajectories (tests/helpers/perturb.py), for comparing label rules.

Every BFCL multi-turn task, each perturbation kind once (seeded), replayed through an episode with the default
training configuration and labelled turn by turn. Prints, per label, the count over all turns and over the
turns that fail first in their episode (the turn bfcl-eval's error type describes).

    PYTHONPATH=. python tests/scripts/perturbed_label_profile.py [--seed 0] [--limit N]
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the helpers package

from helpers.perturb import KINDS, perturb  # noqa: E402
from helpers.turns import labels_of  # noqa: E402

from seal_hub.diagnosis import Label  # noqa: E402
from seal_hub.envs.bfcl import BfclSuite, EpisodeConfig  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=None, help="first N tasks only")
    args = parser.parse_args()
    suite = BfclSuite()
    rng = random.Random(args.seed)
    every, first = Counter(), Counter()
    episodes = 0
    for task in list(suite.tasks.values())[: args.limit]:
        for kind in KINDS:
            steps = perturb(task, kind, rng)
            if steps is None:
                continue
            labels, verdict = labels_of(suite, task, steps, config=EpisodeConfig())
            episodes += 1
            every.update(labels)
            failed = next((t.turn for t in verdict.turns if not t.passed), None)
            if failed is not None:
                first[labels[failed]] += 1
    print(f"{episodes} perturbed episodes, {sum(every.values())} turns, {sum(first.values())} failed episodes")
    print("| label | all turns | first failing turn |\n|---|---:|---:|")
    for label in Label:
        print(f"| `{label}` | {every[label]} | {first[label]} |")


if __name__ == "__main__":
    main()
