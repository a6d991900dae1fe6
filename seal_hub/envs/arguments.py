"""A tool call's arguments as a JSON object, the same way for every suite.

Models write a call's arguments as a JSON string, an object, or garbage; every suite's episode needs them as a
dict before it can check or run the call, and answers the model the same way when they are not one:
`decode_arguments` returns the dict, or None and a message the model can act on (it never raises).
`json_type_name` names a Python value's JSON type for such messages.

Not covered: checking the arguments against a tool's declared parameters (each suite's own, e.g. BFCL's
`seal_hub.envs.bfcl.tools.validate_arguments`).
"""

from __future__ import annotations

import json
from typing import Any


def json_type_name(value: Any) -> str:
    """The JSON type `value` would have ("integer", "object", ...; "null" for None), else its Python type's name."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null" if value is None else type(value).__name__


def decode_arguments(arguments: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Arguments as a dict, decoding a JSON string; `(None, message)` when they are not a JSON object."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            return None, "arguments are not valid JSON; give a JSON object of argument names to values"
    if arguments is None:
        return {}, None
    if not isinstance(arguments, dict):
        return None, f"arguments must be a JSON object of argument names to values, got {json_type_name(arguments)}"
    return arguments, None
