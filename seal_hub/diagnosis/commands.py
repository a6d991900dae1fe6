"""`seal-hub diagnose`: the label table of trajectory files (turns, prevalence, mean reward and rho per label).

The trajectories are labelled by the rules of the suite they were rolled out on (`Suite.diagnose`): a built-in
suite (`--suite`) or a user's environment and dataset (`--environment`, `--dataset`, as `seal-hub rollout` took).
"""

from __future__ import annotations

import argparse

from seal_hub.cli_args import EnvironmentArguments, field_parser, from_namespace
from seal_hub.defaults import DEFAULT_SUITE


def _diagnose(args: argparse.Namespace) -> int:
    from pathlib import Path

    from seal_hub.diagnosis import DEFAULT_RHO, DiagnosisError, FailureProfile, Label
    from seal_hub.envs.builtin import resolve_suite
    from seal_hub.rollout import read_trajectories

    root = Path(args.traj_dir)
    files = sorted(root.rglob("*.parquet")) if root.is_dir() else [root]
    if not files or not files[0].exists():
        raise FileNotFoundError(f"no trajectory Parquet files under {root} (seal-hub rollout writes them)")
    trajectories = [t for path in files for t in read_trajectories(path)]
    environment = from_namespace(EnvironmentArguments, args)
    suite = resolve_suite(args.suite, **environment.environment_options())
    if not suite.turn_labels:
        from seal_hub.envs.builtin import labelled_suites

        raise DiagnosisError(
            f"suite {suite.name!r} has no turn labels; suites with them: {', '.join(labelled_suites())}"
        )
    diagnoses = [suite.diagnose(t, suite.task(t.task_id)) for t in trajectories]
    profile = FailureProfile.of(diagnoses)
    print(f"{len(trajectories)} rollouts, {profile.turns} labelled turns, from {len(files)} file(s)")
    print(f"{'label':<20} {'turns':>6} {'prevalence':>11} {'mean reward':>12} {'rho':>6}")
    for label in Label:
        stats = profile.get(label)
        rho = DEFAULT_RHO[label]
        print(f"{label:<20} {stats.count:>6} {stats.prevalence:>11.3f} {stats.mean_reward:>12.3f} {rho:>6.2f}")
    weights = [d.weight() for d in diagnoses]
    mean_reward = sum(t.reward for t in trajectories) / len(trajectories)
    print(f"mean reward {mean_reward:.3f}  mean weight {sum(weights) / len(weights):.3f}")
    return 0


def add_diagnose_command(commands: argparse._SubParsersAction) -> None:
    diagnose = commands.add_parser(
        "diagnose",
        parents=[field_parser(EnvironmentArguments)],
        help="label every turn of trajectories and print the failure profile",
    )
    diagnose.add_argument("traj_dir", help="a directory of trajectory Parquet files (or one file)")
    diagnose.add_argument("--suite", default=DEFAULT_SUITE, help="the suite the trajectories were rolled out on")
    diagnose.set_defaults(handler=_diagnose)
