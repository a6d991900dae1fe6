"""BFCL function docs as tools: JSON-schema conversion and argument validation.

BFCL describes each API method with a doc in its own dialect (`"type": "dict"`, `"float"`, `"tuple"`, a
`response` schema, enum values written into descriptions). Chat templates take OpenAI-style JSON-schema
tools; `Tool.schema` is that form (types mapped with bfcl-eval's own `GORILLA_TO_OPENAPI` table, the
`response` block dropped), `Tool.doc` keeps BFCL's original for whoever needs the exact protocol.

`validate_arguments` checks a call's arguments against the doc before anything executes: an object, no
missing required argument, no unknown argument, nothing over the size limit. `type_problem` checks each
value against its declared type (an integer is a valid float; a bool is never a number). Both return a
message the agent can act on and never raise.

Not covered: which tools are visible when (see `episode.py`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from seal_hub.envs.arguments import json_type_name
from seal_hub.envs.bfcl.extra import require_bfcl_eval
from seal_hub.envs.protocol import ErrorKind

# Arguments whose JSON form is longer than this are refused (the longest BFCL ground-truth call is ~7 kB).
DEFAULT_MAX_ARGUMENT_CHARS = 65_536


@dataclass(frozen=True, eq=False)
class Tool:
    """One callable API method: its owner class, BFCL's doc, and the chat-template JSON schema."""

    name: str
    class_name: str
    doc: dict[str, Any]
    schema: dict[str, Any]

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(self.doc.get("parameters", {}).get("required", ()))

    @property
    def properties(self) -> dict[str, Any]:
        return self.doc.get("parameters", {}).get("properties", {})


def _convert_schema(node: dict[str, Any]) -> dict[str, Any]:
    """BFCL parameter schema -> JSON schema (recursively); unknown types become strings, as BFCL does."""
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "type":
            out["type"] = _gorilla_to_openapi().get(value, "string")
        elif key == "properties":
            out["properties"] = {name: _convert_schema(sub) for name, sub in value.items()}
        elif key == "items" and isinstance(value, dict):
            out["items"] = _convert_schema(value)
        else:
            out[key] = value
    return out


def to_json_schema(doc: dict[str, Any]) -> dict[str, Any]:
    """A BFCL function doc as an OpenAI/HF chat-template tool."""
    parameters = _convert_schema(doc.get("parameters", {"type": "dict", "properties": {}}))
    parameters["type"] = "object"
    parameters.setdefault("properties", {})
    return {
        "type": "function",
        "function": {"name": doc["name"], "description": doc.get("description", ""), "parameters": parameters},
    }


@cache
def _gorilla_to_openapi() -> dict[str, str]:
    """bfcl-eval's own type table (imported when first needed: this module imports without the bfcl extra)."""
    require_bfcl_eval()
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI

    return GORILLA_TO_OPENAPI


@cache
def class_tools(class_name: str) -> tuple[Tool, ...]:
    """Every documented method of one BFCL API class, in the doc file's order."""
    require_bfcl_eval()
    from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING

    try:
        file_name = MULTI_TURN_FUNC_DOC_FILE_MAPPING[class_name]
    except KeyError:
        raise ValueError(f"no BFCL function docs for class {class_name!r}") from None
    text = resources.files("bfcl_eval").joinpath("data", "multi_turn_func_doc", file_name).read_text("utf-8")
    docs = [json.loads(line) for line in text.splitlines() if line.strip()]
    return tuple(Tool(d["name"], class_name, d, to_json_schema(d)) for d in docs)


_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "float": (int, float),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "tuple": (list,),
    "dict": (dict,),
    "object": (dict,),
}
_JSON_NAMES = {
    "string": "string",
    "integer": "integer",
    "float": "number",
    "number": "number",
    "boolean": "boolean",
    "array": "array",
    "tuple": "array",
    "dict": "object",
    "object": "object",
}


def _type_error(value: Any, schema: dict[str, Any], where: str) -> str | None:
    """A message if `value` does not fit `schema` (BFCL dialect), else None. Checks nested items/properties."""
    declared = schema.get("type")
    allowed = _PYTHON_TYPES.get(declared) if isinstance(declared, str) else None
    if allowed is not None:
        is_bool = isinstance(value, bool)
        if not isinstance(value, allowed) or (is_bool and bool not in allowed):
            return f"argument '{where}' must be of type {_JSON_NAMES[declared]}, got {json_type_name(value)}"
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            if message := _type_error(item, schema["items"], f"{where}[{index}]"):
                return message
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        for key, sub in schema["properties"].items():
            if key in value and (message := _type_error(value[key], sub, f"{where}.{key}")):
                return message
    return None


def _size_over(value: Any, budget: int) -> bool:
    """Whether the JSON form of `value` is (about) longer than `budget`; stops as soon as it is."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            budget -= len(item) + 2
        elif isinstance(item, dict):
            budget -= 2 + 4 * len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            budget -= 2 + 2 * len(item)
            stack.extend(item)
        else:
            budget -= 8
        if budget < 0:
            return True
    return False


def validate_arguments(
    tool: Tool, arguments: dict[str, Any], max_chars: int = DEFAULT_MAX_ARGUMENT_CHARS
) -> tuple[ErrorKind, str] | None:
    """Check decoded arguments against the tool's doc; `(kind, message)` on the first problem, else None."""
    if _size_over(arguments, max_chars):
        return ErrorKind.ARGUMENT_TOO_LARGE, f"arguments are longer than {max_chars} characters, the limit"
    properties = tool.properties
    unexpected = [key for key in arguments if key not in properties]
    if unexpected:
        expected = ", ".join(properties) or "none"
        return ErrorKind.UNEXPECTED_ARGUMENT, (
            f"unexpected argument(s) {', '.join(map(repr, unexpected))} for {tool.name}; its arguments are: {expected}"
        )
    missing = [key for key in tool.required if key not in arguments]
    if missing:
        return (
            ErrorKind.MISSING_ARGUMENT,
            f"missing required argument(s) {', '.join(map(repr, missing))} for {tool.name}",
        )
    return None


def type_problem(tool: Tool, arguments: dict[str, Any]) -> str | None:
    """A message naming the first argument whose value does not fit its declared type, else None.

    Kept apart from `validate_arguments` because BFCL executes ill-typed calls, and one of its ground-truth
    scenarios depends on it (task 173 of every category keys tickets by strings where the doc says integer).
    """
    properties = tool.properties
    for key, value in arguments.items():
        if key in properties and (message := _type_error(value, properties[key], key)):
            return message
    return None
