"""A user environment's class from its import path, and the hash of its source that a version records.

`import_class('package.module:Class')` imports the module (the current folder is importable, as `python -m` makes
it) and returns the class; anything wrong (no such module, the module fails to import, no such class, not a class,
no `reset`) is one `EnvironmentError` line naming the path. `source_hash` is the sha256 of
`inspect.getsource` of the class's module: a published environment version records it, and loading the version
against code whose hash differs warns in one line (`check_source`) and still runs.

Not covered: the tools the class offers (`seal_hub.envs.user.schema`).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import os
import sys

from seal_hub.envs.suite import SuiteError


class EnvironmentError(SuiteError):  # noqa: A001 -- the user environment's own error, a SuiteError for the CLI
    """A user environment that cannot be used as given (import path, tools, dataset); the message names it."""


def import_class(path: str) -> type:
    """The class at 'package.module:Class' (a dotted attribute path after the colon is followed)."""
    module_name, _, attribute = path.partition(":")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # `seal-hub train` is a console script: make the current folder importable
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise EnvironmentError(f"environment {path}: no module {exc.name!r} to import") from None
    except Exception as exc:  # noqa: BLE001 -- the user's module failed while importing: say so in one line
        raise EnvironmentError(
            f"environment {path}: importing {module_name} raised {type(exc).__name__}: {exc}"
        ) from None
    found: object = module
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise EnvironmentError(f"environment {path}: module {module_name} has no {attribute!r}")
        found = getattr(found, part)
    if not inspect.isclass(found):
        raise EnvironmentError(f"environment {path}: {attribute} is a {type(found).__name__}, not a class")
    if not callable(getattr(found, "reset", None)):
        raise EnvironmentError(f"environment {path}: class {attribute} defines no reset(**row) (TRL's form needs one)")
    return found


def source_hash(cls: type) -> str:
    """sha256 of the source of the class's module ('' when Python has no source for it)."""
    module = sys.modules.get(cls.__module__)
    try:
        text = inspect.getsource(module) if module is not None else inspect.getsource(cls)
    except (OSError, TypeError):
        return ""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_source(path: str, recorded: str, current: str) -> str | None:
    """The one-line warning when the class's source is not the one a version recorded (None when it is)."""
    if not recorded or recorded == current:
        return None
    return (
        f"warning: environment {path}: its source (sha256 {current[:12]}) differs from the version's "
        f"(sha256 {recorded[:12]}); running the current code"
    )
