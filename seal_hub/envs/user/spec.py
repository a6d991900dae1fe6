"""The record that names a user environment: its factory's import path, its dataset, its reward functions and the
run's limits.

`EnvironmentSpec` is what a recipe's YAML (`environment:`, `dataset:`, `dataset_revision:`, `reward_funcs:`),
`seal-hub train`, `eval` and `rollout` (`--environment`, `--dataset`, `--dataset_revision`, `--reward_funcs`) and a
published environment version give; `seal_hub.envs.builtin.resolve_suite` turns it into a `UserSuite`. It imports
nothing heavy, so a config check names a user environment without importing it.

`environment` is 'package.module:ATTR', where ATTR is a class, a zero-argument function, or a dict of them (TRL's
`environment_factory`); given in Python (`seal_hub.envs.user.trl_setup`), it is the best name the factory has and
`importable` says whether that name imports back. No `dataset`: the rows were given in Python, or the environment
is dataset-free (`episodes` held-out episodes, `train_episodes` to train on, seeded from `episode_seed`).
`success_threshold`: the reward at or above which an episode passed (SEAL's labels); unset, 1.0 (right for 0/1
rewards; the suite warns once when it sees another reward).

Not covered: importing the class (`seal_hub.envs.user.load`), reading the rows (`seal_hub.envs.user.dataset`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CLASS_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")
DEFAULT_SUCCESS_THRESHOLD = 1.0  # an episode passed when its reward is at least this (a 0/1 reward: when it is 1)

DEFAULT_EVAL_FRACTION = 0.2
DEFAULT_CALL_TIMEOUT_S = 30.0
DEFAULT_MAX_RESULT_CHARS = 8000


@dataclass(frozen=True)
class EnvironmentSpec:
    """A user environment: `environment` ('package.module:Class'), `dataset` (a `datasets` repo id, optionally
    'repo@revision', a saved dataset folder, a data file or JSONL) and how its episodes are run."""

    environment: str
    dataset: str | None = None
    dataset_revision: str | None = None
    eval_fraction: float = DEFAULT_EVAL_FRACTION  # held out when the dataset names no split
    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S  # per tool call (and per reset / get_reward / reward function)
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS  # a longer tool result is cut, with a marker
    reward_funcs: tuple[str, ...] = ()  # 'package.module:function' of each reward function, in TRL's order
    success_threshold: float | None = None  # unset: DEFAULT_SUCCESS_THRESHOLD, with a warning on a reward not 0/1
    episodes: int | None = None  # dataset-free: how many held-out episodes
    train_episodes: int = 0  # dataset-free: how many episodes to train on
    episode_seed: int = 0  # dataset-free: the episodes' seeds start here
    importable: bool = True  # False: given in Python; `environment` is only its name

    def __post_init__(self) -> None:
        if isinstance(self.reward_funcs, str):
            object.__setattr__(self, "reward_funcs", tuple(f for f in self.reward_funcs.split(",") if f))
        object.__setattr__(self, "reward_funcs", tuple(self.reward_funcs))
        for path in (self.environment, *self.reward_funcs) if self.importable else ():
            if not _CLASS_PATH.match(path):
                raise ValueError(
                    f"environment {path!r}: give the class as 'package.module:Class' (an importable module, a colon, "
                    "the class, function or dict name)"
                    if path == self.environment
                    else f"reward_funcs {path!r}: give each as 'package.module:function'"
                )
        if not self.dataset and self.episodes is None and self.importable:
            raise ValueError(f"environment {self.environment}: give its tasks with dataset (a repo id, path or JSONL)")
        if self.episodes is not None and self.episodes < 1:
            raise ValueError("episodes must be >= 1 (the held-out episodes of a dataset-free environment)")
        if self.success_threshold is not None and not isinstance(self.success_threshold, int | float):
            raise ValueError(f"success_threshold must be a number, got {self.success_threshold!r}")
        if self.dataset and "@" in self.dataset and self.dataset_revision is None and not _is_path(self.dataset):
            repo, revision = self.dataset.rsplit("@", 1)
            object.__setattr__(self, "dataset", repo)
            object.__setattr__(self, "dataset_revision", revision or None)
        if not 0.0 < self.eval_fraction < 1.0:
            raise ValueError(f"eval_fraction must be in (0, 1), got {self.eval_fraction}")
        if self.call_timeout_s <= 0:
            raise ValueError(f"call_timeout_s must be > 0 seconds, got {self.call_timeout_s}")
        if self.max_result_chars < 100:
            raise ValueError(f"max_result_chars must be >= 100, got {self.max_result_chars}")

    @property
    def class_name(self) -> str:
        return self.environment.rsplit(":", 1)[-1]

    @property
    def threshold(self) -> float:
        """The reward at or above which an episode passed."""
        return DEFAULT_SUCCESS_THRESHOLD if self.success_threshold is None else float(self.success_threshold)

    @property
    def dataset_ref(self) -> str:
        """The dataset as given, with its revision ('repo@rev'); a dataset-free environment's episodes."""
        if not self.dataset:
            return f"{self.episodes} seeded episodes" if self.episodes is not None else "rows given in Python"
        return self.dataset + (f"@{self.dataset_revision}" if self.dataset_revision else "")

    def flags(self) -> str:
        """The command-line flags that name this environment and its held-out split (`seal-hub eval`, `rollout`)."""
        named = [f"--environment {self.environment}"]
        named += [f"--dataset {self.dataset}"] if self.dataset else [f"--episodes {self.episodes}"]
        if self.dataset_revision is not None:
            named.append(f"--dataset_revision {self.dataset_revision}")
        if self.eval_fraction != DEFAULT_EVAL_FRACTION:
            named.append(f"--eval_fraction {self.eval_fraction:g}")
        if self.reward_funcs:
            named.append(f"--reward_funcs {','.join(self.reward_funcs)}")
        if self.success_threshold is not None:
            named.append(f"--success_threshold {self.success_threshold:g}")
        if not self.dataset and self.episode_seed:
            named.append(f"--episode_seed {self.episode_seed}")
        return " ".join(named)


def _is_path(text: str) -> bool:
    from pathlib import Path

    return Path(text).expanduser().exists()


def environment_spec(
    environment: str | None, dataset: str | None, dataset_revision: str | None = None, **limits
) -> EnvironmentSpec | None:
    """The spec of `environment` and `dataset` (None when neither is given); one without the other is a
    `ValueError` that says what to add."""
    if environment is None and dataset is None:
        return None
    if environment is None:
        raise ValueError(f"dataset {dataset!r} needs environment: the class its rows reset, 'package.module:Class'")
    if dataset is None and limits.get("episodes") is None:
        raise ValueError(
            f"environment {environment!r} needs dataset: its tasks (a repo id, a path or JSONL); or, where reset "
            "makes the prompt, episodes (held-out episodes) and train_episodes"
        )
    return EnvironmentSpec(environment, dataset, dataset_revision, **limits)
