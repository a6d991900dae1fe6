"""`seal-hub` command line: the verify-gt contract (last line, exit code) and user errors."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys

from conftest import PAPER_SPLIT

from seal_hub.cli import main

LAST_LINE = re.compile(r"^verified (\d+)/(\d+) ground-truth episodes \(official checker agrees on (\d+)/(\d+)\)$")


def test_verify_gt_on_the_paper_test_split(capsys):
    code = main(
        ["envs", "verify-gt", "--suite", "bfcl", "--split", "test", "--split-file", str(PAPER_SPLIT), "--no-progress"]
    )
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1] == "verified 400/400 ground-truth episodes (official checker agrees on 400/400)"
    assert code == 0


def test_verify_gt_fails_with_exit_1_when_a_replay_fails(tmp_path, capsys, monkeypatch):
    replay_module = importlib.import_module("seal_hub.envs.bfcl.replay")  # the package re-exports a function

    real = replay_module.ground_truth_steps

    def drop_first_turn(task):
        steps = real(task)
        return [[]] + steps[1:] if task.id == "multi_turn_base_0" else steps

    monkeypatch.setattr(replay_module, "ground_truth_steps", drop_first_turn)
    split = tmp_path / "split.json"
    split.write_text(json.dumps({"train": ["multi_turn_base_0", "multi_turn_base_1"], "test": []}))
    code = main(["envs", "verify-gt", "--split", "train", "--split-file", str(split), "--no-progress"])
    out = capsys.readouterr().out.strip().splitlines()
    assert "FAILED multi_turn_base_0: multi_turn:empty_turn_model_response" in out
    assert out[-1] == "verified 1/2 ground-truth episodes (official checker agrees on 2/2)"
    assert code == 1


def test_bad_split_file_is_a_one_line_error(tmp_path, capsys):
    path = tmp_path / "split.json"
    path.write_text('{"train": ["nope"], "test": []}')
    assert main(["envs", "verify-gt", "--split", "train", "--split-file", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("seal-hub: error: split file") and "unknown task ids" in err and "Traceback" not in err


def test_console_script_runs_as_a_new_user_would():
    result = subprocess.run(
        [sys.executable, "-m", "seal_hub.cli", "envs", "verify-gt", "--split", "train", "--no-progress"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert LAST_LINE.match(result.stdout.strip().splitlines()[-1]).groups() == ("400", "400", "400", "400")


def test_rollout_and_verify_gt_default_to_the_paper_split():
    from seal_hub.cli import _suite_tasks, build_parser
    from seal_hub.envs.bfcl import paper_split, stratified_split

    paper = paper_split()
    parser = build_parser()
    _, tasks = _suite_tasks(parser.parse_args(["rollout", "--out", "x"]))
    assert [t.id for t in tasks] == list(paper.test)
    suite, tasks = _suite_tasks(parser.parse_args(["envs", "verify-gt", "--split", "train"]))
    assert [t.id for t in tasks] == list(paper.train)
    _, tasks = _suite_tasks(parser.parse_args(["rollout", "--out", "x", "--split-file", "stratified", "--seed", "1"]))
    assert [t.id for t in tasks] == list(stratified_split(suite.tasks, seed=1).test)
