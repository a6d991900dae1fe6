"""The suite is the one place a suite's behaviour lives: the contract every built-in suite implements, and the
package around it (no suite named outside its own package, a light interface, no import cycle)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from seal_hub.diagnosis import DiagnosisError
from seal_hub.envs.builtin import SUITES, require_trainable, suite_card, suite_class, trainable_suites
from seal_hub.envs.suite import Suite, SuiteCard

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "seal_hub"


def test_every_built_in_suite_states_its_facts_on_its_class():
    for name in SUITES:
        kind = suite_class(name)
        assert kind.name == name
        assert isinstance(kind.turn_labels, bool) and isinstance(kind.tool_errors, bool)
        assert kind.not_trainable is None or kind.not_trainable.strip()
        assert isinstance(kind.card, SuiteCard) and isinstance(kind.default_split, str)
        missing = [
            member
            for member in ("diagnose", "warmup_script", "oracle_steps", "split_ids")
            if not hasattr(kind, member)
        ]
        assert missing == [], name
    assert trainable_suites() == ("bfcl", "bfcl-single")
    assert suite_card("bfcl").dataset_type == "bfcl_v3_multi_turn" and suite_card("mine") == SuiteCard("mine", "mine")


def test_a_suite_that_cannot_train_says_why_in_one_line():
    with pytest.raises(ValueError, match=r"^suite 'bfcl-memory' cannot train \(only its final answer") as caught:
        require_trainable("bfcl-memory")
    assert str(caught.value).endswith("; trainable suites: bfcl, bfcl-single")
    with pytest.raises(ValueError, match="^unknown suite 'nope'; trainable suites: bfcl, bfcl-single$"):
        require_trainable("nope")
    assert require_trainable("bfcl-single") is suite_class("bfcl-single")


def test_a_suite_without_labels_or_warm_up_refuses_both_by_name():
    from seal_hub.envs.tau2_telecom import Tau2TelecomSuite

    telecom = Tau2TelecomSuite(tasks={})
    assert isinstance(telecom, Suite)
    with pytest.raises(DiagnosisError, match="^suite 'tau2-telecom' has no turn labels$"):
        telecom.diagnose(None, None)
    with pytest.raises(
        ValueError, match="^no SFT warm-up for suite 'tau2-telecom': it has no reference answers to teach$"
    ):
        telecom.warmup_script(None)


def test_the_environment_builds_the_suite_its_interface_version_names():
    from helpers.extras import require_bfcl

    from seal_hub.environment import Environment
    from seal_hub.interface import InterfaceSnapshot

    require_bfcl()
    env = Environment(InterfaceSnapshot.null("bfcl-single"), split="test")
    assert env.suite.name == "bfcl-single"
    obs = env.reset(env.task_ids[0])
    assert obs.task_id in env.suite.tasks and obs.messages[-1]["role"] == "user"


def test_no_module_outside_a_suite_package_compares_with_a_suite_name():
    names = "|".join(re.escape(name) for name in SUITES)
    check = re.compile(rf"""(==|!=)\s*["']({names})["']|["']({names})["']\s*(==|!=)|\bin\s*\(\s*["']({names})["']""")
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in PACKAGE.rglob("*.py")
        if "envs" not in path.relative_to(PACKAGE).parts
        for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1)
        if check.search(line)
    ]
    assert found == []


def test_importing_the_interface_loads_neither_bfcl_eval_nor_datasets():
    code = "import seal_hub.interface, sys; print([m for m in sys.modules if m.startswith(('bfcl_eval', 'datasets'))])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _imported(path: Path, modules: dict[str, Path]) -> set[str]:
    """The seal_hub modules `path` imports when it is imported (not under TYPE_CHECKING, not inside functions)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text("utf-8")).body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for inner in ast.walk(node) if isinstance(node, ast.If | ast.Try) else [node]:
            if isinstance(inner, ast.ImportFrom) and (inner.module or "").startswith("seal_hub"):
                submodules = {f"{inner.module}.{alias.name}" for alias in inner.names} & set(modules)
                found |= submodules
                if len(submodules) < len(inner.names):
                    found.add(inner.module)
            elif isinstance(inner, ast.Import):
                found |= {alias.name for alias in inner.names if alias.name.startswith("seal_hub")}
    return found & set(modules)


def _parents(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def test_the_package_has_no_import_cycle():
    """Importing a.b.c runs a.b's __init__ first, unless a.b is already running (it is the importer's parent)."""
    modules = _modules()
    graph = {}
    for module, path in modules.items():
        targets = set()
        for target in _imported(path, modules):
            targets |= {target} | (_parents(target) & set(modules)) - _parents(module)
        graph[module] = targets - {module}
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> list[str] | None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target] if target in path else [module, target]
            if state.get(target) is None and (cycle := visit(target, [*path, target])):
                return cycle
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state:
            assert visit(module, [module]) is None


def test_a_built_in_suite_is_selected_on_the_command_line_by_its_name(suite):
    assert suite.command_flags() == f"--suite {suite.name}"  # what the held-out comparison's reproduce line prints
