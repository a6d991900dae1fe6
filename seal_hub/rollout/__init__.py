"""Multi-turn rollouts: batched generation with KV caching, episodes stepped in the environment, trajectories."""

from seal_hub.rollout.backend import Generation, GenerationBackend, GenerationRequest, SamplingConfig
from seal_hub.rollout.engine import PolicyInfo, RolloutConfig, RolloutEngine, TemplateError
from seal_hub.rollout.hf_backend import HFBackend
from seal_hub.rollout.records import FEATURES, Trajectory, read_trajectories, write_trajectories
from seal_hub.rollout.reference import SequentialBackend

__all__ = [
    "FEATURES",
    "Generation",
    "GenerationBackend",
    "GenerationRequest",
    "HFBackend",
    "PolicyInfo",
    "RolloutConfig",
    "RolloutEngine",
    "SamplingConfig",
    "SequentialBackend",
    "TemplateError",
    "Trajectory",
    "read_trajectories",
    "write_trajectories",
]
