"""A user environment's tools: its public methods as JSON-schema tools, and a call's arguments bound to them.

The tools are found as TRL's `environment_factory` finds them (trl's GRPOTrainer): the class's functions
(`inspect.getmembers(cls, inspect.isfunction)`, so properties are never evaluated), `reset` and `get_reward`
left out, names starting with `_` left out. Each tool's schema is `transformers.utils.get_json_schema` of the
method (name, type hints, the docstring's description and `Args:`), read off the class without making an
instance; a method that schema reader refuses is one `EnvironmentError` line naming the class and the tool.
Defaults from the signature are added to the properties (`default`), where the interface's schema cues can show
them; `Literal` and `Enum` hints already give `enum` values and required arguments `required`.

`bind` checks a call against the method's signature before it runs: arguments not an object, a missing required
argument, or one the signature does not take come back as the protocol's `ErrorKind`s (never run); values are
passed as the model gave them, as TRL passes them.

`tools=[...]` (plain functions, TRL's `tools` argument) are read the same way (`function_spec`): their schema from
the function itself, called as they are, not on an instance.

Not covered: running the call (`seal_hub.envs.user.calls`), which environments a setup holds
(`seal_hub.envs.user.factory`).
"""

from __future__ import annotations

import inspect
import json
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from seal_hub.envs.protocol import ErrorKind
from seal_hub.envs.user.load import EnvironmentError

CONTROL_METHODS = ("reset", "get_reward")
_PROBE = object()  # what the methods are bound to while their schemas are read (never called)


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, its JSON schema (chat-template form) and the method's signature (without self);
    `function` for a plain function (TRL's `tools=`), None for a method called on the episode's instance."""

    name: str
    schema: dict[str, Any]
    signature: inspect.Signature
    function: Callable[..., Any] | None = field(default=None, compare=False)

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(self.schema["function"]["parameters"].get("required", ()))


def tool_names(cls: type) -> list[str]:
    """The class's tool methods, as TRL lists them: public functions other than reset and get_reward."""
    return [
        name
        for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
        if name not in CONTROL_METHODS and not name.startswith("_")
    ]


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def tool_spec(cls: type, name: str) -> ToolSpec:
    """The schema of `cls.name`; a method transformers cannot describe is an `EnvironmentError` naming it."""
    function = inspect.getattr_static(cls, name)
    bound = types.MethodType(function, _PROBE)  # the schema reader needs a bound method, not an instance
    return _described(bound, name, f"environment class {cls.__name__}, tool {name}")


def function_spec(function: Callable[..., Any]) -> ToolSpec:
    """The schema of a plain tool function (TRL's `tools=`), called as it is."""
    name = getattr(function, "__name__", None)
    if not callable(function) or not isinstance(name, str):
        raise EnvironmentError(f"tools: {function!r} is not a function (TRL's tools are plain, named functions)")
    spec = _described(function, name, f"tool function {name}")
    return ToolSpec(spec.name, spec.schema, spec.signature, function)


def _described(function: Callable[..., Any], name: str, where: str) -> ToolSpec:
    from transformers.utils import get_json_schema

    try:
        schema = get_json_schema(function)
    except Exception as exc:  # noqa: BLE001 -- transformers' own exception types: one line naming the tool
        raise EnvironmentError(
            f"{where}: its schema cannot be read ({exc}); give it type hints and a Google-style docstring with an "
            "Args: line per argument, as TRL needs"
        ) from None
    signature = inspect.signature(function)
    properties = schema["function"]["parameters"].get("properties", {})
    for argument, parameter in signature.parameters.items():
        default = parameter.default
        if argument in properties and default is not inspect.Parameter.empty and _jsonable(default):
            properties[argument]["default"] = default
        elif argument in properties and isinstance(default, Enum):
            properties[argument]["default"] = default.value
    return ToolSpec(name, schema, signature)


def tool_specs(cls: type, required: bool = True) -> tuple[ToolSpec, ...]:
    """Every tool of `cls`, in name order; a class with none is an `EnvironmentError` when `required`."""
    specs = tuple(tool_spec(cls, name) for name in tool_names(cls))
    if not specs and required:
        raise EnvironmentError(
            f"environment class {cls.__name__} has no tools: its public methods (other than reset and get_reward) "
            "are the tools"
        )
    return specs


def decode(arguments: Any) -> dict[str, Any] | None:
    """The call's arguments as an object (a JSON string decoded), or None when they are not one."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return None
    return arguments if isinstance(arguments, dict) else None


def bind(spec: ToolSpec, arguments: Any) -> tuple[dict[str, Any] | None, ErrorKind | None, str]:
    """(keyword arguments, None, '') when the call fits the signature, else (None, why, a message for the model)."""
    decoded = decode(arguments)
    if decoded is None:
        return None, ErrorKind.ARGUMENTS_NOT_OBJECT, f"the arguments of {spec.name} are not a JSON object"
    parameters = spec.signature.parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    unexpected = [name for name in decoded if name not in parameters and not takes_any]
    if unexpected:
        return None, ErrorKind.UNEXPECTED_ARGUMENT, f"{spec.name} takes no argument(s) {', '.join(unexpected)}"
    try:
        spec.signature.bind(**decoded)
    except TypeError as exc:
        return None, ErrorKind.MISSING_ARGUMENT, f"{spec.name}: {exc}"
    return decoded, None, ""
