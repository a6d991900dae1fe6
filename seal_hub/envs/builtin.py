"""The built-in suites by name, and which of them can train.

`SUITES` maps a suite's name to a zero-argument function that imports its class lazily (optional extras stay
optional, and naming a suite builds nothing); `suite_class` gives the class, whose class attributes are the
suite's fixed facts (`turn_labels`, `tool_errors`, `not_trainable`, `default_split`, `card`), so a config check or
a card reads them without loading a task. `load_suite` builds the suite; an unknown name or a missing extra is a
one-line `SuiteError`. `trainable_suites` and `require_trainable` read `not_trainable` off the classes, and
`suite_card` a suite's card by its name (a name that is no built-in suite's gets the plain card).

`resolve_suite` is the one way every command (`seal-hub train`, `eval`, `rollout`, the recipe, `load_environment`)
gets its suite: a built-in suite by name, or a user's own environment class with its dataset
(`seal_hub.envs.user`: `environment` and `dataset` given, or the record a published version keeps).

Not covered: the contract a suite implements (`seal_hub.envs.suite`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from seal_hub.defaults import DEFAULT_SUITE
from seal_hub.envs.suite import Suite, SuiteCard, SuiteError


def _bfcl() -> type:
    from seal_hub.envs.bfcl import BfclSuite

    return BfclSuite


def _bfcl_single() -> type:
    from seal_hub.envs.bfcl_single import BfclSingleSuite

    return BfclSingleSuite


def _bfcl_memory() -> type:
    from seal_hub.envs.bfcl_memory import BfclMemorySuite

    return BfclMemorySuite


def _tau2_telecom() -> type:
    from seal_hub.envs.tau2_telecom import Tau2TelecomSuite

    return Tau2TelecomSuite


# name -> its class, imported when asked, so a missing optional extra fails late
SUITES: dict[str, Callable[[], type]] = {
    "bfcl": _bfcl,
    "bfcl-single": _bfcl_single,
    "bfcl-memory": _bfcl_memory,
    "tau2-telecom": _tau2_telecom,
}


def suite_class(name: str) -> type:
    """The class of the built-in suite called `name` (nothing loaded); an unknown name is a `SuiteError`."""
    importer = SUITES.get(name)
    if importer is None:
        raise SuiteError(f"unknown suite {name!r}; choose one of: {', '.join(SUITES)}")
    return importer()


def load_suite(name: str) -> Suite:
    """The suite called `name`; an unknown name or a missing extra is a `SuiteError` that says what to do."""
    return suite_class(name)()


def resolve_suite(
    suite: str | None = None,
    *,
    environment: str | None = None,
    dataset: str | None = None,
    dataset_revision: str | None = None,
    record: Any = None,
    **limits: Any,
) -> Suite:
    """The suite a config or command names: `environment` ('package.module:Class') with its `dataset` (and
    `dataset_revision`; `limits`: `EnvironmentSpec`'s episode limits) is a user environment, as is `record` (a
    published version's `UserEnvironmentRecord`); else the built-in suite called `suite`. One of environment and
    dataset without the other is a `SuiteError` that says what to add."""
    from seal_hub.envs.user.spec import environment_spec

    try:
        spec = environment_spec(environment, dataset, dataset_revision, **limits)
    except ValueError as exc:
        raise SuiteError(str(exc)) from None
    if spec is None and record is None:
        return load_suite(suite or DEFAULT_SUITE)
    from seal_hub.envs.user.suite import UserSuite

    return UserSuite(spec) if spec is not None else UserSuite.from_record(record)


def suite_tasks(
    name: str, split: str, split_file: str | None = None, seed: int = 0, **environment: Any
) -> tuple[Suite, list[Any]]:
    """The suite called `name` (or the user environment `environment` names: `resolve_suite`'s keywords) and the
    tasks of its `split` (of `split_file` when given; `seed` seeds a 'stratified' split): the one way every command
    picks its tasks."""
    suite = resolve_suite(name, **environment)
    return suite, suite.select(suite.split_ids(split, split_file, seed=seed))


def suite_card(name: str) -> SuiteCard:
    """What cards call the suite `name`: a built-in suite's own card, else the plain card of that name."""
    return suite_class(name).card if name in SUITES else SuiteCard.plain(name)


def trainable_suites() -> tuple[str, ...]:
    """The built-in suites that can train."""
    return tuple(name for name in SUITES if suite_class(name).not_trainable is None)


def labelled_suites() -> tuple[str, ...]:
    """The built-in suites whose turns get labels."""
    return tuple(name for name in SUITES if suite_class(name).turn_labels)


def require_trainable(suite: str | Suite | type) -> Any:
    """`suite` (a name: its class) when it can train; otherwise a one-line `ValueError` that says why and names
    the suites that can."""
    choices = ", ".join(trainable_suites())
    if isinstance(suite, str):
        if suite not in SUITES:
            raise ValueError(f"unknown suite {suite!r}; trainable suites: {choices}")
        suite = suite_class(suite)
    if suite.not_trainable is not None:
        raise ValueError(f"suite {suite.name!r} cannot train ({suite.not_trainable}); trainable suites: {choices}")
    return suite
