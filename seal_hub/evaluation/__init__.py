"""Evaluation: score a policy (or the oracle) on a suite's held-out tasks under the paper's protocol.

`EvalProtocol` (settings), `evaluate_policy` (the one evaluation path of a model), `run_evaluation` (the resumable
harness under it), `ModelRunner` / `OracleRunner` (who plays the agent), `Scores` (per-category success and the
unweighted average), and the files an evaluation writes (`results.json` schema ``seal_hub.eval/1``). `seal-hub eval`
is the command line over these; the metric also ships as a Hugging Face `evaluate` module in
`seal_hub/evaluation/metric/` (`METRIC_PATH`).
"""

from importlib import resources
from pathlib import Path

from seal_hub.evaluation.harness import EvalResult, evaluate_policy, run_evaluation
from seal_hub.evaluation.protocol import EvalProtocol
from seal_hub.evaluation.results import SCHEMA, EvalSpec, interface_record
from seal_hub.evaluation.runners import ModelRunner, OracleRunner
from seal_hub.evaluation.scores import CategoryScore, Scores
from seal_hub.evaluation.store import EvalStore, ResumeError

# package data (an installed wheel holds it as a checkout does): evaluate.load(str(METRIC_PATH))
METRIC_PATH = Path(str(resources.files("seal_hub.evaluation").joinpath("metric", "seal_success")))

__all__ = [
    "METRIC_PATH",
    "SCHEMA",
    "CategoryScore",
    "EvalProtocol",
    "EvalResult",
    "EvalSpec",
    "EvalStore",
    "ModelRunner",
    "OracleRunner",
    "ResumeError",
    "Scores",
    "evaluate_policy",
    "interface_record",
    "run_evaluation",
]
