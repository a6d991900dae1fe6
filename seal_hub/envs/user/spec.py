"""The record that names a user environment: its class's import path, its dataset and the run's limits.

`EnvironmentSpec` is what a recipe's YAML (`environment:`, `dataset:`, `dataset_revision:`), `seal-hub train`,
`eval` and `rollout` (`--environment`, `--dataset`, `--dataset_revision`) and a published environment version
give; `seal_hub.envs.builtin.resolve_suite` turns it into a `UserSuite`. It imports nothing heavy, so a config
check names a user environment without importing it.

Not covered: importing the class (`seal_hub.envs.user.load`), reading the rows (`seal_hub.envs.user.dataset`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CLASS_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")

DEFAULT_EVAL_FRACTION = 0.2
DEFAULT_CALL_TIMEOUT_S = 30.0
DEFAULT_MAX_RESULT_CHARS = 8000


@dataclass(frozen=True)
class EnvironmentSpec:
    """A user environment: `environment` ('package.module:Class'), `dataset` (a `datasets` repo id, optionally
    'repo@revision', a saved dataset folder, a data file or JSONL) and how its episodes are run."""

    environment: str
    dataset: str
    dataset_revision: str | None = None
    eval_fraction: float = DEFAULT_EVAL_FRACTION  # held out when the dataset names no split
    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S  # per tool call (and per reset / get_reward)
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS  # a longer tool result is cut, with a marker

    def __post_init__(self) -> None:
        if not _CLASS_PATH.match(self.environment):
            raise ValueError(
                f"environment {self.environment!r}: give the class as 'package.module:Class' (an importable module, "
                "a colon, the class name)"
            )
        if not self.dataset:
            raise ValueError(f"environment {self.environment}: give its tasks with dataset (a repo id, path or JSONL)")
        if "@" in self.dataset and self.dataset_revision is None and not _is_path(self.dataset):
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
        return self.environment.rsplit(":", 1)[1]

    @property
    def dataset_ref(self) -> str:
        """The dataset as given, with its revision ('repo@rev')."""
        return self.dataset + (f"@{self.dataset_revision}" if self.dataset_revision else "")

    def flags(self) -> str:
        """The command-line flags that name this environment and its held-out split (`seal-hub eval`, `rollout`)."""
        named = [f"--environment {self.environment}", f"--dataset {self.dataset}"]
        if self.dataset_revision is not None:
            named.append(f"--dataset_revision {self.dataset_revision}")
        if self.eval_fraction != DEFAULT_EVAL_FRACTION:
            named.append(f"--eval_fraction {self.eval_fraction:g}")
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
    if dataset is None:
        raise ValueError(f"environment {environment!r} needs dataset: its tasks (a repo id, a path or JSONL)")
    return EnvironmentSpec(environment, dataset, dataset_revision, **limits)
