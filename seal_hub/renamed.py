"""Old public names kept as aliases of their new ones: a package's `__getattr__` that warns and forwards.

`renamed_names(package, names, aliases)` builds the module-level `__getattr__` of `package` (PEP 562): a name in
`aliases` (old -> new) returns `names[new]` with a `DeprecationWarning` that says what to use; any other unknown
name is the usual `AttributeError`. Imports nothing, so a package that uses it stays cheap to import.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any


def renamed_names(package: str, names: Mapping[str, Any], aliases: Mapping[str, str]) -> Callable[[str], Any]:
    """The `__getattr__` of `package` (its `globals()` as `names`) that answers each old name in `aliases`."""

    def __getattr__(name: str) -> Any:
        if name in aliases:
            new = aliases[name]
            warnings.warn(f"{package}.{name} is deprecated: use {package}.{new}", DeprecationWarning, stacklevel=2)
            return names[new]
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
