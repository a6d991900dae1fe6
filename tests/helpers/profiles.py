"""The failure profile the interface tests and the hub tests evolve an interface from: 40 rollouts, 100 turns, where
missing and spurious tool calls pass the guideline thresholds (prevalence, count, mean reward)."""

from __future__ import annotations

from seal_hub.diagnosis import FailureProfile

PROFILE = FailureProfile.from_dict(
    {
        "rollouts": 40,
        "turns": 100,
        "labels": {
            "missing_tool_call": {"count": 25, "prevalence": 0.25, "mean_reward": 0.3},
            "spurious_tool_call": {"count": 12, "prevalence": 0.12, "mean_reward": 0.1},
            "pass": {"count": 63, "prevalence": 0.63, "mean_reward": 0.5},
        },
    }
)
