"""A user's own TRL setup (TRL 1.16's `environment_factory`, `reward_funcs` and `tools`), seen as a suite.

A class whose public methods are its tools (name, type hints and docstring give each tool's schema, as TRL reads
them), with `reset(**row)` starting an episode from one dataset row and `get_reward()` scoring it, runs here
unchanged: `EnvironmentSpec` names it (`package.module:Class`) and its dataset, `UserSuite` is the suite the rest
of seal_hub trains, evaluates and rolls out on, with one instance of the class per episode.

Modules, one concept each: `spec` (the record a config or command gives), `load` (import path -> factory or
function, the hash of their source), `factory` (environment factories and plain tools, probed as TRL probes them),
`schema` (methods -> JSON-schema tools, binding arguments to signatures), `dataset` (rows -> tasks, the held-out
split, seeded dataset-free episodes), `calls` (one call in a worker thread or on the async loop: time limit,
captured prints, text results), `rewards` (reward functions and `get_reward`, as TRL sums them), `episode` (one
isolated episode), `labels` (turn labels from what the protocol sees), `suite` (`UserSuite`), `trl_setup`
(`user_suite_from_trl`: GRPOTrainer's arguments as a suite and its tasks).
docs/environments.md is the user's page.
"""

from seal_hub.envs.user.spec import EnvironmentSpec

__all__ = ["EnvironmentSpec", "UserSuite"]


def __getattr__(name: str):
    if name == "UserSuite":  # importing the suite loads transformers' schema reader: only when asked
        from seal_hub.envs.user.suite import UserSuite

        return UserSuite
    raise AttributeError(name)
