"""BFCL single-turn (AST and relevance categories) as an evaluation and training suite, scored by bfcl-eval's own
checker; its train/test split ships in `data/split.json` (`splits.py`)."""

from seal_hub.envs.bfcl_single.checker import check
from seal_hub.envs.bfcl_single.episode import SingleEpisode
from seal_hub.envs.bfcl_single.suite import BfclSingleSuite, key_calls
from seal_hub.envs.bfcl_single.tasks import CATEGORIES, SingleTask, SingleTaskDataError, load_tasks

__all__ = [
    "CATEGORIES",
    "BfclSingleSuite",
    "SingleEpisode",
    "SingleTask",
    "SingleTaskDataError",
    "check",
    "key_calls",
    "load_tasks",
]
