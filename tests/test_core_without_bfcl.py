"""The core needs no BFCL: the trainer, evaluation harness and replay Space import nothing of bfcl-eval; the
built-in suites' registry lists the BFCL suites and reads their facts without it; the tiny model builds without
it, from the tokenizer the package ships (which a fresh training on bfcl-eval's corpus reproduces); asking for a
BFCL suite where bfcl-eval is missing is one line that names the extra; and no module outside `seal_hub/envs`
imports a BFCL package or asks a suite with `hasattr`/`getattr`.

"bfcl-eval is missing" is made in a subprocess by `sys.modules["bfcl_eval"] = None`, which is what Python's import
system reads as a module that cannot be imported (`import` raises ModuleNotFoundError, `find_spec` answers None), so
these run the same in the full test install; docs/install.md records the same checks in a fresh venv with the plain
`pip install .`."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys

import pytest
from helpers.paths import ROOT

from seal_hub.models.tiny import SHIPPED_VOCAB, shipped_bpe

PACKAGE = ROOT / "seal_hub"
WITHOUT_BFCL = 'import sys\nsys.modules["bfcl_eval"] = None  # bfcl-eval missing, as Python reads it\n'
EXTRA_LINE = 'need the bfcl extra, and bfcl-eval is not installed: pip install "seal_hub[bfcl]"'


def run_python(code: str, timeout: float = 300) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_the_trainer_the_evaluation_harness_and_the_replay_space_import_no_bfcl_eval():
    code = (
        "import seal_hub.training.trainer, seal_hub.evaluation.harness, seal_hub.replay\n"
        "import seal_hub.cli, seal_hub.scripts.seal, seal_hub.diagnosis, seal_hub.interface, seal_hub.hub\n"
        "import seal_hub.report, seal_hub.rollout.engine, seal_hub.envs.user.suite\n"
        "import sys\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'bfcl_eval'))\n"
    )
    assert run_python(code).stdout.strip() == "[]"


def test_the_registry_lists_the_bfcl_suites_and_their_facts_and_the_tiny_tokenizer_loads_without_bfcl_eval():
    code = WITHOUT_BFCL + (
        "import json\n"
        "from seal_hub.envs.builtin import SUITES, suite_card, suite_class, trainable_suites, labelled_suites\n"
        "from seal_hub.models.tiny import train_tokenizer\n"
        "facts = {n: [suite_class(n).turn_labels, suite_class(n).not_trainable is None] for n in SUITES}\n"
        "print(json.dumps([list(SUITES), trainable_suites(), labelled_suites(), suite_card('bfcl').dataset_type,\n"
        "                  facts, len(train_tokenizer())]))\n"
    )
    names, trainable, labelled, card, facts, tokens = json.loads(run_python(code).stdout)
    assert names == ["bfcl", "bfcl-single", "bfcl-memory", "tau2-telecom"]
    assert trainable == labelled == ["bfcl", "bfcl-single"] and card == "bfcl_v3_multi_turn"
    assert facts["bfcl-memory"] == [False, False] and facts["bfcl"] == [True, True]
    assert tokens == len(shipped_bpe()["vocab"]) + 4  # the shipped BPE and the Hermes tool tags it adds


def test_asking_for_a_bfcl_suite_without_the_extra_is_one_line_that_names_it(tmp_path):
    argvs = [
        ["eval", "--model", "oracle", "--suite", name, "--output_dir", str(tmp_path / name)]
        for name in ("bfcl", "bfcl-single", "bfcl-memory")
    ]
    argvs += [["train", "--suite", "bfcl-single", "--output_dir", str(tmp_path / "train")], ["envs", "verify-gt"]]
    code = WITHOUT_BFCL + (
        "import contextlib, io, json\n"
        "from seal_hub.cli import main\n"
        "said = []\n"
        f"for argv in {argvs!r}:\n"
        "    err = io.StringIO()\n"
        "    with contextlib.redirect_stderr(err):\n"
        "        said.append([main(argv), err.getvalue()])\n"
        "print(json.dumps(said))\n"
    )
    said = json.loads(run_python(code).stdout)
    assert len(said) == len(argvs)
    for (code_, err), argv in zip(said, argvs, strict=True):
        lines = err.strip().splitlines()
        assert code_ == 2 and len(lines) == 1, (argv, err)
        assert lines[0].startswith("seal-hub") and lines[0].endswith(EXTRA_LINE), (argv, err)


def test_the_shipped_tiny_tokenizer_is_what_bfcl_evals_corpus_trains():
    pytest.importorskip("bfcl_eval", reason='retraining reads bfcl-eval\'s data: pip install "seal_hub[bfcl]"')
    from seal_hub.models.tiny import train_bpe

    assert train_bpe(SHIPPED_VOCAB) == shipped_bpe()


def _outside_envs() -> list:
    return [path for path in PACKAGE.rglob("*.py") if "envs" not in path.relative_to(PACKAGE).parts]


def test_no_module_outside_envs_imports_a_bfcl_package():
    found = []
    for path in _outside_envs():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if any(re.match(r"(seal_hub\.envs\.bfcl\w*|bfcl_eval)(\.|$)", name) for name in names):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []


def test_no_module_outside_envs_asks_a_suite_with_hasattr_or_getattr():
    asking = re.compile(r"\b(hasattr|getattr)\(\s*(self\.)?suite\b")
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _outside_envs()
        for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1)
        if asking.search(line)
    ]
    assert found == []


def test_every_built_in_suite_answers_what_the_trainer_asks_without_bfcl_eval():
    """The parts of the protocol the trainer once probed with hasattr/getattr: a built-in suite's schemas carry no
    defaults, it names no exception classes for recovery hints and keeps no record beyond its name."""
    from seal_hub.envs.builtin import SUITES, suite_class
    from seal_hub.envs.suite import Suite

    for name in SUITES:
        suite = suite_class(name)(tasks={})  # no task loaded: bfcl-eval and tau2 are not needed for this
        assert isinstance(suite, Suite), name
        assert (suite.schema_defaults, suite.record(), suite.raised([])) == (False, None, None), name
