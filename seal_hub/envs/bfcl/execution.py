"""Building BFCL API instances and executing one validated call on them, by direct method call.

bfcl-eval's own executor turns every call into a Python string and `eval`s it against instances kept in
module globals. Here a call is a name looked up among the tools visible to the episode and a method bound
on that episode's own instances, called with keyword arguments: model text never reaches `eval`, and no
state is shared between episodes. The *result string* is formatted exactly as bfcl-eval formats it
(str as is, dict as `json.dumps`, anything else `str()`, exceptions as `Error during execution: ...`), so
the response check compares the same strings the official checker compares.

Not covered: deciding whether a call may run (see `episode.py`) or judging results (see `verifier.py`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from seal_hub.envs.bfcl.tasks import Task, api_class, is_stateless
from seal_hub.envs.bfcl.tools import Tool
from seal_hub.envs.protocol import ErrorKind

_BAD_PATH = re.compile(
    r"No such (file|directory)|Not a (file|directory)|Is a directory|path not allowed|Unsupported path", re.I
)
_NOT_AUTHENTICATED = re.compile(r"not authenticated|logged in|log in|access token|token expired", re.I)


def json_copy(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars); several times faster than `copy.deepcopy`."""
    if isinstance(value, dict):
        return {key: json_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_copy(item) for item in value]
    return value


def instantiate(task: Task) -> dict[str, Any]:
    """Fresh instances of the task's API classes, loaded from (a copy of) its initial configuration."""
    instances: dict[str, Any] = {}
    for class_name in task.involved_classes:
        instance = api_class(class_name)()
        if not is_stateless(class_name):
            config = json_copy(task.initial_config.get(class_name, {}))
            instance._load_scenario(config, long_context=task.long_context)
        instances[class_name] = instance
    return instances


def format_result(result: Any) -> str:
    """A tool's return value as the text bfcl-eval records for it."""
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except (TypeError, ValueError):
            return str(result)
    return str(result)


def classify_result(result: Any) -> ErrorKind | None:
    """The error kind of a tool's *returned* error payload (`{"error": ...}`), or None for a normal result."""
    if not (type(result) is dict and "error" in result):
        return None
    text = str(result["error"])
    if _BAD_PATH.search(text):
        return ErrorKind.BAD_PATH
    if _NOT_AUTHENTICATED.search(text):
        return ErrorKind.NOT_AUTHENTICATED
    return ErrorKind.TOOL_ERROR


def execute(instances: dict[str, Any], tool: Tool, arguments: dict[str, Any]) -> tuple[str, ErrorKind | None]:
    """Call `tool` on its instance with keyword arguments; returns the result text and its error kind.

    The arguments are copied first: tools keep references to what they are given (`post_tweet` stores its
    `mentions` list), and the call record must not change when the tool later mutates its state.
    """
    try:
        result = getattr(instances[tool.class_name], tool.name)(**json_copy(arguments))
    except Exception as exc:  # a tool that raises is an observation for the model, never a crash
        return f"Error during execution: {exc}", ErrorKind.TOOL_EXCEPTION
    return format_result(result), classify_result(result)
