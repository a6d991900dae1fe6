"""BFCL v4 memory (kv, rec_sum, vector backends) as an evaluation suite, scored by bfcl-eval's agentic checker."""

from seal_hub.envs.bfcl_memory.episode import MemoryEpisode
from seal_hub.envs.bfcl_memory.oracle import MemoryOracle
from seal_hub.envs.bfcl_memory.suite import BfclMemorySuite
from seal_hub.envs.bfcl_memory.tasks import BACKENDS, CATEGORIES, MemoryDataError, MemoryTask, load_tasks

__all__ = [
    "BACKENDS",
    "CATEGORIES",
    "BfclMemorySuite",
    "MemoryDataError",
    "MemoryEpisode",
    "MemoryOracle",
    "MemoryTask",
    "load_tasks",
]
