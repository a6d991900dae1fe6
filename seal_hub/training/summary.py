"""What a finished training run prints: the per-iteration table, where its artifacts are, or why nothing trained.

`summary_lines(output_dir, trainer)` reads the run's iteration records (`run_records.read_metrics`): a row
per iteration (step, success rate, mean rollout weight, environment version, the three most prevalent labels), then
the environment versions, the rho that moved away from 1, the artifacts' folder and, when the run publishes, its
three repositories. `complete_line(trainer)` is the one line of a relaunch that found the run already complete. The
script prints them as they are: other tools and tests read these lines, so their wording is a contract.

Not covered: the held-out comparison's block (`seal_hub.training.comparison`), and reports across runs
(`seal-hub report`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from seal_hub.training.run_records import read_metrics

if TYPE_CHECKING:
    from seal_hub.training.trainer import SealTrainer


def summary_lines(output_dir: str | Path, trainer: SealTrainer) -> list[str]:
    """The run's summary (its first line starts with a blank line, as printed after the training log)."""
    lines = ["\nSEAL run summary", f"{'step':>5} {'success':>8} {'mean w':>7} {'interface':>9}  top labels"]
    for m in read_metrics(output_dir):
        labels = sorted(m["label_profile"]["labels"].items(), key=lambda kv: -kv[1]["prevalence"])[:3]
        shown = ", ".join(f"{name} {v['prevalence']:.2f}" for name, v in labels)
        lines.append(
            f"{m['step']:>5} {m['success_rate']:>8.1%} {m['mean_weight']:>7.3f} {m['interface_version']:>9}  {shown}"
        )
    lines.append(f"environment versions: {', '.join(trainer.store.versions())} (now {trainer.interface.version})")
    lines.append("rho: " + ", ".join(f"{k}={v:.3f}" for k, v in trainer.window.rho.items() if v != 1.0))
    lines.append(f"artifacts: {Path(output_dir).resolve()} (iterations/, interfaces/, checkpoint-*/, adapter)")
    if trainer.publish is not None:
        repos = trainer.publish.repos
        lines.append(
            f"published: {repos.trajectories}, {repos.environment}, {repos.adapter} "
            "(`seal-hub hub list` shows their versions)"
        )
    return lines


def complete_line(trainer: SealTrainer) -> str:
    """A relaunch of a run that already reached its budget: it trained nothing, and how to extend it."""
    args = trainer.args
    budget = f"max_steps {args.max_steps}" if args.max_steps > 0 else f"num_train_epochs {args.num_train_epochs:g}"
    return (
        f"SEAL run {args.output_dir} is already complete at step {trainer.completed_at} ({budget}): "
        f"nothing to train; to extend it, relaunch with a larger --max_steps "
        f"(e.g. --max_steps {2 * trainer.completed_at})"
    )


def run_summary(trainer: SealTrainer) -> str:
    """What the script prints when training ends: `complete_line` after a relaunch that trained nothing, else the
    summary of `trainer.args.output_dir`."""
    if trainer.completed_at is not None:
        return complete_line(trainer)
    return "\n".join(summary_lines(trainer.args.output_dir, trainer))
