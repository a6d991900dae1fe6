"""Lazy exports for a package's `__init__` (PEP 562): each name is imported from its module on first use.

    __getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

with `_LAZY` mapping an exported name to the module that defines it. This keeps `import seal_hub` (and its
subpackages) free of torch, TRL and datasets until a name that needs them is touched.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, table: Mapping[str, str], namespace: Mapping[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`, whose lazy names are `table` (name -> defining module) and
    whose own names are `namespace` (the package's `globals()`)."""

    def __getattr__(name: str) -> Any:
        if name in table:
            return getattr(importlib.import_module(table[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*namespace, *table})

    return __getattr__, __dir__
