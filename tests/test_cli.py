"""`seal-hub` command line: the verify-gt contract (last line, exit code) and user errors."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys

import pytest
from helpers.extras import require_bfcl
from helpers.paths import PAPER_SPLIT

from seal_hub.cli import main

require_bfcl()

LAST_LINE = re.compile(r"^verified (\d+)/(\d+) ground-truth episodes \(official checker agrees on (\d+)/(\d+)\)$")


def two_paper_tasks(tmp_path, split: str) -> str:
    """A split file of the first two tasks of the paper's `split` (the 800-task replay is test_bfcl_verifier's)."""
    ids = json.loads(PAPER_SPLIT.read_text())[split][:2]
    path = tmp_path / "two.json"
    path.write_text(json.dumps({"train": [], "test": [], split: ids}))
    return str(path)


def test_verify_gt_on_the_paper_test_split(tmp_path, capsys):
    split = two_paper_tasks(tmp_path, "test")
    code = main(["envs", "verify-gt", "--suite", "bfcl", "--split", "test", "--split_file", split, "--no_progress"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1] == "verified 2/2 ground-truth episodes (official checker agrees on 2/2)"
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
    code = main(["envs", "verify-gt", "--split", "train", "--split_file", str(split), "--no_progress"])
    out = capsys.readouterr().out.strip().splitlines()
    assert "FAILED multi_turn_base_0: multi_turn:empty_turn_model_response" in out
    assert out[-1] == "verified 1/2 ground-truth episodes (official checker agrees on 2/2)"
    assert code == 1


def test_bad_split_file_is_a_one_line_error(tmp_path, capsys):
    path = tmp_path / "split.json"
    path.write_text('{"train": ["nope"], "test": []}')
    assert main(["envs", "verify-gt", "--split", "train", "--split_file", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("seal-hub: error: split file") and "unknown task ids" in err and "Traceback" not in err


def test_console_script_runs_as_a_new_user_would(tmp_path):
    split = two_paper_tasks(tmp_path, "train")
    result = subprocess.run(
        [sys.executable, "-m", "seal_hub.cli", "envs", "verify-gt", "--split", "train", "--split_file", split],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert LAST_LINE.match(result.stdout.strip().splitlines()[-1]).groups() == ("2", "2", "2", "2")


def test_rollout_and_verify_gt_default_to_the_paper_split():
    from seal_hub.cli import build_parser
    from seal_hub.envs.bfcl import paper_split, stratified_split
    from seal_hub.envs.builtin import suite_tasks

    def _suite_tasks(args):
        return suite_tasks(args.suite, args.split, args.split_file, seed=args.split_seed)

    paper = paper_split()
    parser = build_parser()
    _, tasks = _suite_tasks(parser.parse_args(["rollout", "--output_dir", "x"]))
    assert [t.id for t in tasks] == list(paper.test)
    suite, tasks = _suite_tasks(parser.parse_args(["envs", "verify-gt", "--split", "train"]))
    assert [t.id for t in tasks] == list(paper.train)
    _, tasks = _suite_tasks(
        parser.parse_args(["rollout", "--output_dir", "x", "--split_file", "stratified", "--split_seed", "1"])
    )
    assert [t.id for t in tasks] == list(stratified_split(suite.tasks, seed=1).test)


def _subcommands(parser, path=()):
    """Every (command path, parser) below `parser`."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from _subcommands(sub, (*path, name))


# the CLI settings that are also recipe fields (seal-hub train / recipes/seal.py / YAML keys)
SHARED = {
    "rollout": {"num_generations", "max_live_episodes", "temperature", "top_p", "max_new_tokens", "max_context_tokens"}
    | {"parser_style", "seed", "split_file", "split_seed", "categories"},
    "eval": {"max_new_tokens", "max_context_tokens", "max_live_episodes", "parser_style", "split_file"}
    | {"split_seed", "categories"},
}


# flags whose spelling another tool relies on, as their issue wrote them (seal-hub estimate: issue 15)
CONTRACT_SPELLINGS = ("--gpu-memory",)


def test_cli_options_carry_the_recipe_field_names():
    """One spelling everywhere: what `seal-hub rollout/eval` share with the recipe has the recipe's name, and every
    visible option is spelled like a field (--max_new_tokens, not --max-new-tokens)."""
    import argparse
    from dataclasses import fields

    from seal_hub.cli import build_parser
    from seal_hub.scripts.seal import make_parser

    recipe = {f.name for cls in make_parser().dataclass_types for f in fields(cls)}
    commands = dict(_subcommands(build_parser()))
    for path, sub in commands.items():
        for action in sub._actions:
            if action.help == argparse.SUPPRESS:
                continue
            for option in action.option_strings:
                spelled = option in ("-h", "--help", *CONTRACT_SPELLINGS) or re.fullmatch(r"--[a-z0-9_]+", option)
                assert spelled, (path, option)
    for command, shared in SHARED.items():
        options = {a.dest: a.option_strings[0] for a in commands[(command,)]._actions if a.help != argparse.SUPPRESS}
        assert shared <= recipe and shared <= set(options), (command, shared - set(options))
        assert {options[name] for name in shared} == {f"--{name}" for name in shared}


def test_earlier_option_spellings_are_refused_and_the_recipe_spellings_are_listed(capsys):
    from seal_hub.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["rollout", "--output_dir", "x", "--max_live_episodes", "3", "--parser_style", "llama3"])
    assert (args.output_dir, args.max_live_episodes, args.parser_style) == ("x", 3, "llama3")
    defaults = parser.parse_args(["eval", "--model", "tiny"])
    assert (defaults.max_live_episodes, defaults.parser_style, defaults.no_progress) == (16, None, False)
    for old in (["--batch-size", "3"], ["--max-new-tokens", "5"], ["--no-progress"]):
        with pytest.raises(SystemExit):
            parser.parse_args(["rollout", "--output_dir", "x", *old])
        assert "unrecognized arguments" in capsys.readouterr().err
    for command in (["rollout", "--help"], ["eval", "--help"]):
        with pytest.raises(SystemExit):
            parser.parse_args(command)
        shown = capsys.readouterr().out
        assert "--max_live_episodes" in shown and "--parser_style" in shown and "--output_dir" in shown
