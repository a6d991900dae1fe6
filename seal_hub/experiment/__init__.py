"""The paper's experiment: five arms trained on one budget, each evaluated on the held-out split, one report.

An experiment configuration (`recipes/configs/experiment_*.yaml`) names one per-run recipe configuration
(`base_config`), overrides that apply to every arm (`base`), and the evaluation settings. Each arm is the base
plus its ablation switches only (`ARMS`: vanilla GRPO = all three off, full SEAL, and one switch off each), so
the budget (steps, batch, rollouts, tasks, warm-up) is identical by construction. Each arm runs once per seed
(`seeds`); with an SFT warm-up in the base config, the arms of a seed start from that seed's one warm-up.
`manifest.json` in the output directory records the arms, their overrides, the budget and the seeds, and a rerun
with a different plan is refused rather than mixed into the old one; the tables give each setting's mean and 95%
interval over the seeds.

Resumable per arm: an arm whose `arm.json` says trained is skipped, an interrupted one is relaunched into its
run directory (the recipe resumes from its last checkpoint), and evaluations resume through
`seal_hub.evaluation.run_evaluation` (a finished one is read back, not rerun). The experiment is one process:
each arm trains in its own `accelerate launch` of the recipe (`launch`: under the experiment's
`accelerate_config`, several processes or DeepSpeed there), so an arm's GPU memory is given back when it ends;
then the experiment evaluates and reports in its own process.

Not covered: the training itself (`seal_hub.scripts.seal`, launched per arm), the tables and figures of
`seal-hub report` (reused as they are), the paper's OOD suites that need the live web or an LLM user.
"""

from seal_hub.experiment.config import (
    ARMS,
    ARMS_BY_NAME,
    BUDGET_KEYS,
    SEED_KEYS,
    Arm,
    ExperimentConfig,
    ExperimentError,
    open_manifest,
)
from seal_hub.experiment.launch import ArmFailed, launch_arm, launched_processes
from seal_hub.experiment.run import ArmResult, SuiteUnavailable, eval_arms, evaluate_arm, train_arms
from seal_hub.experiment.tables import experiment_tables, write_report

__all__ = [
    "ARMS",
    "ARMS_BY_NAME",
    "BUDGET_KEYS",
    "SEED_KEYS",
    "Arm",
    "ArmFailed",
    "ArmResult",
    "ExperimentConfig",
    "ExperimentError",
    "SuiteUnavailable",
    "eval_arms",
    "evaluate_arm",
    "experiment_tables",
    "launch_arm",
    "launched_processes",
    "open_manifest",
    "train_arms",
    "write_report",
]
