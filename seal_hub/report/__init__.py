"""Reports of SEAL runs and evaluations: `report.md` and PNG figures (`seal-hub report`).

`inputs` reads run and evaluation directories, `naming` names them, `tables`, `plots` and `eval_plots` draw
them, `paper` holds the paper's published numbers (package data), `build` puts a report together.
"""

from seal_hub.renamed import renamed_names
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

# old names, kept as aliases: a report's inputs are not a run's sources
_DEPRECATED = {"load_source": "load_input"}


__getattr__ = renamed_names(__name__, globals(), _DEPRECATED)
