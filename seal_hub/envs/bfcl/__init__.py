"""BFCL v3 multi-turn as an executable, verifiable environment (tasks from the installed `bfcl-eval`)."""

from seal_hub.envs.bfcl.episode import Episode, EpisodeConfig
from seal_hub.envs.bfcl.replay import ground_truth_steps, replay
from seal_hub.envs.bfcl.splits import Split, SplitError, load_split, paper_split, resolve_split, stratified_split
from seal_hub.envs.bfcl.suite import BfclSuite
from seal_hub.envs.bfcl.tasks import CATEGORIES, Task, load_tasks
from seal_hub.envs.bfcl.tools import Tool, class_tools, to_json_schema
from seal_hub.envs.bfcl.verifier import GroundTruthTrace
from seal_hub.envs.protocol import EpisodeVerdict, TurnVerdict

__all__ = [
    "CATEGORIES",
    "BfclSuite",
    "Episode",
    "EpisodeConfig",
    "EpisodeVerdict",
    "GroundTruthTrace",
    "Split",
    "SplitError",
    "Task",
    "Tool",
    "TurnVerdict",
    "class_tools",
    "ground_truth_steps",
    "load_split",
    "load_tasks",
    "paper_split",
    "replay",
    "resolve_split",
    "stratified_split",
    "to_json_schema",
]
