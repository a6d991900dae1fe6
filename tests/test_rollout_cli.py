"""`seal-hub rollout` as a user runs it, with the tiny model."""

from __future__ import annotations

import pytest
from helpers.extras import require_bfcl
from helpers.paths import PAPER_SPLIT

from seal_hub.cli import main
from seal_hub.rollout import read_trajectories

require_bfcl()


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
            "--split_file",
            str(PAPER_SPLIT),
            "--limit",
            "2",
            "--num_generations",
            "2",
            "--max_new_tokens",
            "8",
            "--output_dir",
            str(out),
            "--no_progress",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed[-2].startswith("episodes 4  success rate 0.0% (0/4)  steps ")
    assert "tokens/s" in printed[-2]
    reused, prefilled = (int(w) for w in printed[-1].split() if w.isdigit())
    assert reused > prefilled > 0  # the second rollout of each task reused the first one's prefix
    trajectories = read_trajectories(out / "trajectories.parquet")
    # --limit as in seal-hub eval: the split's categories taken in turn (base, then miss_func)
    assert [t.task_id for t in trajectories] == ["multi_turn_base_172"] * 2 + ["multi_turn_miss_func_158"] * 2
    assert all(t.policy_id.endswith("tiny-policy") for t in trajectories)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--split_file", "/nonexistent/split.json"], "does not exist"),
        (["--model", "/nonexistent/model"], "does not exist"),
        (["--limit", "0", "--split", "train"], "--limit must be >= 1"),
    ],
)
def test_rollout_cli_user_errors_are_one_line(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.setenv("SEAL_HUB_CACHE", str(tmp_path / "cache"))
    code = main(["rollout", "--model", "tiny", "--output_dir", str(tmp_path / "out"), "--no_progress", *argv])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


def test_diagnose_cli_prints_the_label_table(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SEAL_HUB_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    assert (
        main(
            [
                "rollout",
                "--model",
                "tiny",
                "--split",
                "test",
                "--split_file",
                str(PAPER_SPLIT),
                "--limit",
                "2",
                "--max_new_tokens",
                "4",
                "--output_dir",
                str(out),
                "--no_progress",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["diagnose", str(out)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("2 rollouts, ") and "labelled turns, from 1 file(s)" in lines[0]
    table = {line.split()[0]: line.split()[1:] for line in lines[2:-1]}
    assert set(table) == {
        "spurious_tool_call",
        "correct_abstention",
        "missing_tool_call",
        "invalid_tool_call",
        "argument_mismatch",
        "recovery_failure",
        "instance_mismatch",
        "state_mismatch",
        "response_mismatch",
        "pass",
    }
    labelled = int(lines[0].split(", ")[1].split()[0])
    assert sum(int(row[0]) for row in table.values()) == labelled > 0
    assert lines[-1].startswith("mean reward 0.000  mean weight ")


def test_diagnose_cli_without_trajectories_is_a_one_line_error(tmp_path, capsys):
    assert main(["diagnose", str(tmp_path)]) == 2
    assert "no trajectory Parquet files" in capsys.readouterr().err


def test_a_corrupt_trajectory_file_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "run" / "trajectories.parquet"
    bad.parent.mkdir()
    bad.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(ValueError, match="not a readable trajectory Parquet file"):
        read_trajectories(bad)
    assert main(["diagnose", str(bad.parent)]) == 2
    err = capsys.readouterr().err
    assert "trajectories.parquet" in err and "Traceback" not in err


def test_a_corrupt_checkpoint_state_names_the_file_and_the_fix(tmp_path):
    from seal_hub.training.run_records import last_checkpoint, load_state

    folder = tmp_path / "checkpoint-3"
    folder.mkdir()
    (folder / "trainer_state.json").write_text("{truncated")
    with pytest.raises(ValueError, match="trainer_state.json is not valid JSON.*delete the checkpoint"):
        load_state(folder)
    with pytest.raises(FileNotFoundError, match="is not a SEAL checkpoint"):
        load_state(tmp_path)
    (folder / "trainer_state.json").write_text('{"global_step": 3, "stateful_callbacks": {}}')
    with pytest.raises(ValueError, match="holds no SEAL loop state.*is not a SEAL checkpoint"):
        load_state(folder)
    assert last_checkpoint(tmp_path) is None
