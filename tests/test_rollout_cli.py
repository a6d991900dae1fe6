"""`seal-hub rollout` as a user runs it, with the tiny model."""

from __future__ import annotations

import pytest
from conftest import PAPER_SPLIT

from seal_hub.cli import main
from seal_hub.rollout import read_trajectories


def test_rollout_cli_writes_trajectories_and_a_summary(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SEAL_HUB_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code = main(
        [
            "rollout",
            "--model",
            "tiny",
            "--suite",
            "bfcl",
            "--split",
            "test",
            "--split-file",
            str(PAPER_SPLIT),
            "--limit",
            "2",
            "--num-generations",
            "2",
            "--max-new-tokens",
            "8",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed[-1].startswith("episodes 4  success rate 0.0% (0/4)  steps ")
    assert "tokens/s" in printed[-1]
    trajectories = read_trajectories(out / "trajectories.parquet")
    assert [t.task_id for t in trajectories] == ["multi_turn_base_172"] * 2 + ["multi_turn_base_140"] * 2
    assert all(t.policy_id.endswith("tiny-policy") for t in trajectories)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--split-file", "/nonexistent/split.json"], "does not exist"),
        (["--model", "/nonexistent/model"], "does not exist"),
        (["--limit", "0", "--split", "train"], "--limit must be >= 1"),
    ],
)
def test_rollout_cli_user_errors_are_one_line(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.setenv("SEAL_HUB_CACHE", str(tmp_path / "cache"))
    code = main(["rollout", "--model", "tiny", "--out", str(tmp_path / "out"), "--no-progress", *argv])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err
