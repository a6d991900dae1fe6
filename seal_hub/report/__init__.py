"""Reports of SEAL runs and evaluations: `report.md` and PNG figures (`seal-hub report`).

`inputs` reads run and evaluation directories, `naming` names them, `tables`, `plots` and `eval_plots` draw
them, `paper` holds the paper's published numbers (package data), `build` puts a report together.
"""

from seal_hub.report.build import Report, build_report, parse_source_argument
from seal_hub.report.inputs import EvalRecord, ReportInputError, RunRecord, load_input

__all__ = [
    "EvalRecord",
    "Report",
    "ReportInputError",
    "RunRecord",
    "build_report",
    "load_input",
    "parse_source_argument",
]
