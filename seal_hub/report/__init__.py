"""Reports of SEAL runs and evaluations: `report.md` and PNG figures (`seal-hub report`).

`sources` reads run and evaluation directories, `naming` names them, `tables`, `plots` and `eval_plots` draw
them, `paper` holds the paper's published numbers (package data), `build` puts a report together.
"""

from seal_hub.report.build import Report, build_report, parse_source_argument
from seal_hub.report.sources import EvalRecord, ReportInputError, RunRecord, load_source

__all__ = [
    "EvalRecord",
    "Report",
    "ReportInputError",
    "RunRecord",
    "build_report",
    "load_source",
    "parse_source_argument",
]
