"""The environments of a TRL setup: `environment_factory` and `tools`, probed as TRL 1.16's `GRPOTrainer` probes
them, each as one `Environment` record an episode runs on.

`environment_factory` is any zero-argument callable that makes an instance with `reset` (a class anywhere, a class
defined inside a function, a `functools.partial`, a function), or a dict of them; with a dict, each dataset row's
`environment` column names the one its episode uses, and only that environment's tools are offered in its prompt
(TRL's multi-environment mode). `tools` are plain functions offered beside every environment's methods (TRL's
`tools=`); with no factory at all they are the whole setup (`Environment.name` None, no instance, no `reset`).

Probing: a class factory is read off the class without making an instance; any other factory is called once (under
the call time limit, as TRL calls it once at start) and the class of what it returns is read. A factory whose probe
fails, or whose instance has no `reset`, is one `EnvironmentError` line naming it. An environment's tools are the
standalone functions, then the class's public methods (a method wins a name they share, as TRL's tool dict has it).

What a published version records of the factories: `factory_path` gives 'module:qualname' for what can be imported
back by that path (a module-level class or function), None for what cannot (a class inside a function, a partial,
a lambda); `seal_hub.envs.user.suite` records the command line's own path when one was given.

Not covered: the tool schemas (`seal_hub.envs.user.schema`), rewards (`seal_hub.envs.user.rewards`).
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from seal_hub.envs.user.calls import run_limited
from seal_hub.envs.user.load import EnvironmentError
from seal_hub.envs.user.schema import ToolSpec, function_spec, tool_specs

ENVIRONMENT_COLUMN = "environment"  # a row's choice among a dict of factories (TRL's column name)


@dataclass(frozen=True)
class Environment:
    """One environment of the setup: its name (a dict key; None for a single factory or for tools only), the
    factory, the class its instances have (None: tools only) and the tools it offers."""

    name: str | None
    factory: Callable[[], Any] | None = field(compare=False)
    cls: type | None
    tools: tuple[ToolSpec, ...]

    @property
    def label(self) -> str:
        """How one-line messages name it: the class ('tools' for a setup of plain functions)."""
        return self.cls.__name__ if self.cls is not None else "tools"

    @property
    def owns_reward(self) -> bool:
        """Whether its class defines `get_reward` (TRL then scores its rollouts with it, weight 1)."""
        return self.cls is not None and callable(getattr(self.cls, "get_reward", None))

    @property
    def schemas(self) -> tuple[dict[str, Any], ...]:
        return tuple(tool.schema for tool in self.tools)

    def tool(self, name: str) -> ToolSpec | None:
        return next((tool for tool in self.tools if tool.name == name), None)


def callable_name(function: Any) -> str:
    """A callable's name as TRL logs it: a partial's function, a function's `__name__`, else its class name."""
    while isinstance(function, functools.partial):
        function = function.func
    return getattr(function, "__name__", type(function).__name__)


def factory_path(factory: Any) -> str | None:
    """'module:qualname' when importing that gives `factory` back, else None (module docstring)."""
    module, qualname = getattr(factory, "__module__", None), getattr(factory, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname or module == "__main__":
        return None
    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    return f"{module}:{qualname}" if found is factory else None


def _probe(name: str | None, factory: Any, timeout_s: float) -> type:
    """The class of the instances `factory` makes: itself for a class, else the type of one probe instance."""
    where = f"environment_factory{f'[{name!r}]' if name is not None else ''} ({callable_name(factory)})"
    if not callable(factory):
        raise EnvironmentError(f"{where}: a factory must be a zero-argument callable, got {type(factory).__name__}")
    if inspect.isclass(factory):
        cls = factory
    else:
        outcome = run_limited(factory, {}, timeout_s)
        if not outcome.ok:
            why = (
                f"ran past {timeout_s:g} s" if outcome.timed_out else f"raised {outcome.error_class}: {outcome.error}"
            )
            raise EnvironmentError(f"{where}: calling it to read its tools {why}")
        cls = type(outcome.value)
    if not callable(getattr(cls, "reset", None)):
        raise EnvironmentError(f"{where}: class {cls.__name__} defines no reset(**row) (TRL's form needs one)")
    return cls


def probe(
    environment_factory: Any = None, tools: list[Callable[..., Any]] | None = None, timeout_s: float = 30.0
) -> dict[str | None, Environment]:
    """The setup's environments by name (module docstring); neither a factory nor tools is an `EnvironmentError`."""
    standalone = tuple(function_spec(function) for function in tools or ())
    if environment_factory is None:
        if not standalone:
            raise EnvironmentError(
                "give environment_factory (TRL's environment class), tools (plain functions), or both"
            )
        return {None: Environment(None, None, None, standalone)}
    factories: Mapping[Any, Any]
    if isinstance(environment_factory, Mapping):
        if not environment_factory:
            raise EnvironmentError("environment_factory is an empty dict: map each environment's name to its factory")
        factories = environment_factory
    else:
        factories = {None: environment_factory}
    found: dict[str | None, Environment] = {}
    for name, factory in factories.items():
        if name is not None and not isinstance(name, str):
            raise EnvironmentError(
                f"environment_factory: the dict's keys are the rows' environment names, got {name!r}"
            )
        cls = _probe(name, factory, timeout_s)
        methods = tool_specs(cls, required=False)
        named = {tool.name: tool for tool in standalone} | {tool.name: tool for tool in methods}
        if not named:
            raise EnvironmentError(
                f"environment class {cls.__name__} has no tools: its public methods (other than reset and get_reward) "
                "are the tools"
            )
        found[name] = Environment(name, factory, cls, tuple(named.values()))
    return found
