"""tau2-bench telecom in solo mode as an evaluation suite, scored by tau2's own evaluator (extra: `[tau2]`)."""

from seal_hub.envs.tau2_telecom.episode import TelecomEpisode
from seal_hub.envs.tau2_telecom.suite import Tau2TelecomSuite
from seal_hub.envs.tau2_telecom.tasks import TelecomTask, load_tasks, require_tau2

__all__ = ["Tau2TelecomSuite", "TelecomEpisode", "TelecomTask", "load_tasks", "require_tau2"]
