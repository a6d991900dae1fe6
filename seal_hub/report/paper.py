"""The paper's published numbers, shipped as package data (`data/paper_bfcl.json`) with their source.

Reports put them beside our own evaluations when the suite is `bfcl`. They are data, not code: the plotting
and table code never names a figure, so correcting a number (or adding a table of the paper) is an edit of
the JSON file only.

Not covered: numbers for other suites (the paper reports OOD transfer, not reproduced offline here).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

PAPER_FILE = "paper_bfcl.json"


@dataclass(frozen=True)
class PaperResult:
    table: str  # "main" or "ablation"
    model: str
    hub_id: str
    setting: str  # "base", "SEAL", "vanilla RL", "w/o ..."
    average: float  # percent


@dataclass(frozen=True)
class PaperNumbers:
    suite: str
    num_tasks: int  # the held-out tasks behind every number
    metric: str
    source: dict[str, str]
    results: tuple[PaperResult, ...]

    def citation(self) -> str:
        return (
            f'"{self.source["title"]}", arXiv {self.source["arxiv"]} ({self.source["url"]}): {self.source["tables"]}'
        )

    def for_model(self, model_id: str) -> list[PaperResult]:
        """The main-table rows of the same base model (matched on the Hub id's name, case-insensitively)."""
        name = model_id.rstrip("/").rsplit("/", 1)[-1].lower()
        return [r for r in self.results if r.table == "main" and r.hub_id.rsplit("/", 1)[-1].lower() == name]


@cache
def paper_numbers() -> PaperNumbers:
    data = json.loads(resources.files("seal_hub.report").joinpath("data", PAPER_FILE).read_text("utf-8"))
    return PaperNumbers(
        suite=data["suite"],
        num_tasks=int(data["num_tasks"]),
        metric=data["metric"],
        source=dict(data["source"]),
        results=tuple(PaperResult(**row) for row in data["results"]),
    )
