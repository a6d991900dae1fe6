"""A user's own environment, written in TRL's `environment_factory` form, seen as a suite.

A class whose public methods are its tools (name, type hints and docstring give each tool's schema, as TRL reads
them), with `reset(**row)` starting an episode from one dataset row and `get_reward()` scoring it, runs here
unchanged: `EnvironmentSpec` names it (`package.module:Class`) and its dataset, `UserSuite` is the suite the rest
of seal_hub trains, evaluates and rolls out on, with one instance of the class per episode.

Modules, one concept each: `spec` (the record a config or command gives), `load` (import path -> class, the hash
of its source), `schema` (methods -> JSON-schema tools, binding arguments to signatures), `dataset` (rows ->
tasks, the held-out split), `calls` (one call in a worker thread: time limit, captured prints, text results),
`episode` (one isolated episode), `labels` (turn labels from what the protocol sees), `suite` (`UserSuite`).
docs/environments.md is the user's page.
"""

from seal_hub.envs.user.spec import EnvironmentSpec

__all__ = ["EnvironmentSpec", "UserSuite"]


def __getattr__(name: str):
    if name == "UserSuite":  # importing the suite loads transformers' schema reader: only when asked
        from seal_hub.envs.user.suite import UserSuite

        return UserSuite
    raise AttributeError(name)
