"""The layout tree of docs/layout.md names every module of the package, at its place in the tree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def layout_paths(page: str) -> set[str]:
    """Paths of the `seal_hub/` tree in a page's Layout block: entries by indentation, two spaces a level."""
    block = page.split("## Layout\n", 1)[1].split("```", 2)[1]
    paths: set[str] = set()
    stack: list[str] = []
    inside = False
    for line in block.splitlines():
        if line.startswith("seal_hub/"):
            inside, stack = True, ["seal_hub"]
            continue
        if not inside or not line.strip():
            continue
        if not line.startswith(" "):
            break  # the next top-level entry: the tree is over
        depth = (len(line) - len(line.lstrip(" "))) // 2
        entry = line.split()[0]
        if not re.fullmatch(r"[\w.]+(/|\.py)", entry):
            continue  # a description's continuation line
        stack = stack[:depth] + [entry.rstrip("/")]
        paths.add("/".join(stack))
    return paths


def test_every_module_of_the_package_appears_in_the_layout_page():
    shown = layout_paths((ROOT / "docs" / "layout.md").read_text("utf-8"))
    modules = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "seal_hub").rglob("*.py")
        if p.name != "__init__.py" or p.parent.name == "seal_hub"
    }
    assert modules - shown == set(), "modules missing from the Layout tree of docs/layout.md"
    stale = {p for p in shown if p.endswith(".py")} - modules
    assert stale == set(), "the Layout tree of docs/layout.md names modules that do not exist"


def test_the_parser_places_entries_by_indentation():
    page = (
        "## Layout\n\n```\nseal_hub/\n  a.py   x\n  pkg/   y\n    b.py  z\n           more text\n  c.py\ntests/\n```\n"
    )
    assert layout_paths(page) == {"seal_hub/a.py", "seal_hub/pkg", "seal_hub/pkg/b.py", "seal_hub/c.py"}


@pytest.mark.parametrize(
    ("module", "old", "new"),
    [
        ("seal_hub.hub", "publish_adapter", "publish_policy"),
        ("seal_hub.hub", "attach_adapter", "attach_policy"),
        ("seal_hub.hub", "PublishedAdapter", "PublishedPolicy"),
        ("seal_hub.replay", "open_source", "open_replay_source"),
        ("seal_hub.report", "load_source", "load_input"),
    ],
)
def test_a_renamed_public_name_is_gone_and_its_new_name_works(module, old, new):
    """docs/layout.md's Names: pre-1.0, an old name is removed with its rename (no deprecated aliases at 0.1.0)."""
    import importlib

    package = importlib.import_module(module)
    assert callable(getattr(package, new))
    with pytest.raises(AttributeError):
        getattr(package, old)
