"""A user environment's factory or reward function from its import path, and the hash of its source that a version
records.

`import_attribute('package.module:ATTR')` imports the module (the current folder is importable, as `python -m`
makes it) and returns what ATTR names (a dotted path is followed): a class, a function, a `functools.partial`, a
dict of them (TRL's `environment_factory` takes any zero-argument callable or a dict), or a reward function; what
it must be is checked where it is used (`seal_hub.envs.user.factory`, `seal_hub.envs.user.rewards`). Anything
wrong (no such module, the module fails to import, no such attribute) is one `EnvironmentError` line naming the
path.

`sources_hash` is the sha256 of `inspect.getsource` of the modules that define a setup's objects (the factory, the
class it makes, the reward functions, plain tools): of the one module's source when they all live in one (so a
class-only environment hashes as it always did), else of the sorted per-module hashes. A published environment
version records it, and loading the version against code whose hash differs warns in one line (`check_source`) and
still runs. A `functools.partial` counts by its function's module; its bound arguments are not hashed (they are
data the caller gives, often not printable the same way twice).

Not covered: the tools the class offers (`seal_hub.envs.user.schema`).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import os
import sys

from seal_hub.envs.suite import SuiteError


class EnvironmentError(SuiteError):  # noqa: A001 -- the user environment's own error, a SuiteError for the CLI
    """A user environment that cannot be used as given (import path, tools, dataset); the message names it."""


def import_attribute(path: str) -> object:
    """What 'package.module:ATTR' names (a dotted attribute path after the colon is followed)."""
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
    return found


def _module_of(obj: object) -> str | None:
    while isinstance(obj, functools.partial):
        obj = obj.func
    module = getattr(obj, "__module__", None) or getattr(type(obj), "__module__", None)
    return module if isinstance(module, str) else None


def sources_hash(objects: list[object]) -> str:
    """sha256 over the modules that define `objects` (module docstring); '' when none has source."""
    hashes: dict[str, str] = {}
    for obj in objects:
        name = _module_of(obj)
        if name is None or name in hashes or name == "builtins":
            continue
        module = sys.modules.get(name)
        try:
            text = inspect.getsource(module) if module is not None else ""
        except (OSError, TypeError):
            text = ""
        if text:
            hashes[name] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if len(hashes) <= 1:
        return next(iter(hashes.values()), "")
    return hashlib.sha256(",".join(sorted(hashes.values())).encode("utf-8")).hexdigest()


def check_source(path: str, recorded: str, current: str) -> str | None:
    """The one-line warning when the class's source is not the one a version recorded (None when it is)."""
    if not recorded or recorded == current:
        return None
    return (
        f"warning: environment {path}: its source (sha256 {current[:12]}) differs from the version's "
        f"(sha256 {recorded[:12]}); running the current code"
    )
