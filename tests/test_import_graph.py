"""No import cycle between seal_hub's modules, imports inside functions included, and a light `seal_hub.environment`.

The graph is read from the source with `ast` (nothing imported): an edge for every ``import`` and ``from ... import``
anywhere in a module (top level, functions, methods), to the deepest seal_hub module it names (``from seal_hub.hub
import fetch`` is an edge to ``seal_hub.hub``, the package's ``__init__``). Imports under ``if TYPE_CHECKING:`` never
run and are left out. A cycle fails the test, named module by module.

The same graph collapsed to layers (each subpackage one node, each top-level module its own, the CLI entries
``*/commands.py`` aside) has no cycle either: a cycle fails naming each import that closes it as ``file:line``.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "seal_hub"


def module_files() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its ``__init__``)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skipped.update(id(inner) for inner in ast.walk(child))
    return skipped


def _imported(node: ast.AST, package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*parts, base] if base else parts)
        return [f"{base}.{alias.name}" for alias in node.names]
    return []


def import_sites() -> list[tuple[str, str, int]]:
    """(module, the seal_hub module it imports, line) for every import the graph counts (see the module docstring)."""
    modules = module_files()

    def deepest(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    sites = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        skipped = _type_checking_nodes(tree)
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            for target in {deepest(t) for t in _imported(node, package)}:
                if target is not None and target != name:
                    sites.append((name, target, node.lineno))
    return sites


def import_graph() -> dict[str, set[str]]:
    """module -> the seal_hub modules it imports anywhere in its body (see the module docstring)."""
    graph: dict[str, set[str]] = {name: set() for name in module_files()}
    for name, target, _ in import_sites():
        graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def layer(module: str) -> str:
    """The node a module is in the layer graph: its subpackage (``seal_hub.hub`` for ``seal_hub.hub.local``), or
    itself for a top-level module."""
    return ".".join(module.split(".")[:2])


def layer_sites() -> dict[tuple[str, str], list[str]]:
    """(layer, layer it imports) -> each import's ``file:line``, imports in the CLI entries (``commands``) left out."""
    files = module_files()
    sites: dict[tuple[str, str], list[str]] = {}
    for module, target, line in sorted(import_sites()):
        if module.rpartition(".")[2] != "commands" and layer(module) != layer(target):
            sites.setdefault((layer(module), layer(target)), []).append(f"{files[module].relative_to(ROOT)}:{line}")
    return sites


def back_edges(component: list[str], sites: dict[tuple[str, str], list[str]]) -> list[tuple[str, str]]:
    """The edges to cut so that the component has no cycle: its members ordered top layer first so that the fewest
    import sites point up (exact, by dynamic programming over subsets), and the edges that still point up."""
    members = sorted(component)
    if len(members) > 16:  # too many orders to weigh: name every edge inside
        return [(a, b) for a in members for b in members if (a, b) in sites]
    up = [[len(sites.get((a, b), ())) for b in members] for a in members]  # a placed below b imports it: a back edge
    best: dict[int, tuple[int, list[int]]] = {0: (0, [])}
    for placed in range(1 << len(members)):
        cost, order = best[placed]
        for v in range(len(members)):
            if placed & (1 << v):
                continue
            step = cost + sum(up[v][u] for u in order)
            if (placed | (1 << v)) not in best or step < best[placed | (1 << v)][0]:
                best[placed | (1 << v)] = (step, [*order, v])
    order = best[(1 << len(members)) - 1][1]
    return [(members[v], members[u]) for i, v in enumerate(order) for u in order[:i] if up[v][u]]


def test_the_graph_sees_function_level_imports():
    graph = import_graph()
    # seal_hub.cli imports every command module inside build_parser only
    assert "seal_hub.evaluation.commands" in graph["seal_hub.cli"]
    assert "seal_hub.hub.local" in graph["seal_hub.hub.backends"]
    # the finder reports a planted cycle, naming its modules
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    # and names the edge of a cycle with the fewest imports as the one that closes it
    sites = {("a", "b"): ["a.py:1", "a.py:9"], ("b", "c"): ["b.py:2"], ("c", "a"): ["c.py:3", "c.py:4"]}
    assert back_edges(["a", "b", "c"], sites) == [("b", "c")]


def test_no_import_cycle_between_modules():
    found = cycles(import_graph())
    named = "; ".join(" <-> ".join(component) for component in found)
    assert not found, f"import cycles (imports inside functions included): {named}"


def test_stepping_an_environment_loads_no_torch():
    code = (
        "import json, sys\nimport seal_hub.environment\n"
        "print(json.dumps([m for m in ('torch', 'trl', 'peft', 'transformers') if m in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_subpackages_form_layers():
    sites = layer_sites()
    graph: dict[str, set[str]] = {}
    for source, target in sites:
        graph.setdefault(source, set()).add(target)
        graph.setdefault(target, set())
    found = cycles(graph)
    named = "; ".join(
        f"{' <-> '.join(component)}, closed by "
        + ", ".join(f"{a} -> {b} at {' '.join(sites[a, b])}" for a, b in back_edges(component, sites))
        for component in found
    )
    assert not found, f"import cycles between subpackages (imports inside functions included): {named}"
