"""`seal-hub eval` as a user runs it: the oracle, the tiny model, resuming, and bad input."""

from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
import pytest
from helpers.extras import require_bfcl

from seal_hub.cli import main
from seal_hub.diagnosis.records import DIAGNOSIS_FEATURES
from seal_hub.evaluation import SCHEMA
from seal_hub.evaluation import runners as runners_module
from seal_hub.rollout import FEATURES, read_trajectories

require_bfcl()

LAST_LINE = re.compile(r"^eval (\S+): avg (\d+\.\d\d) on (\d+) tasks$")
CONTRACT_KEYS = {
    "schema",
    "suite",
    "split",
    "split_source",
    "num_tasks",
    "model",
    "adapter",
    "interface",
    "protocol",
    "scores",
    "packages",
    "created_at",
    "wall_seconds",
}


def _eval(out, *argv):
    return main(["eval", "--suite", "bfcl", "--output_dir", str(out), "--no_progress", *argv])


def _last_line(capsys) -> re.Match:
    lines = capsys.readouterr().out.strip().splitlines()
    match = LAST_LINE.match(lines[-1])
    assert match, lines[-1]
    return match


def test_oracle_passes_every_task_of_each_category_on_the_paper_test_split(tmp_path, suite, capsys):
    ids = suite.split_ids("test")
    # a few tasks of each category, including the miss_func task whose ground truth calls a withheld tool
    chosen = [i for c in suite.categories for i in [x for x in ids if f"_{c}_" in x][:3]] + ["multi_turn_miss_func_49"]
    split = tmp_path / "split.json"
    split.write_text(json.dumps({"train": [], "test": chosen}))
    assert _eval(tmp_path / "out", "--model", "oracle", "--split_file", str(split)) == 0
    match = _last_line(capsys)
    assert match.groups() == ("bfcl", "100.00", str(len(chosen)))
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert set(results) >= CONTRACT_KEYS and results["schema"] == SCHEMA
    assert results["task_ids"] == chosen
    per_category = results["scores"]["per_category"]
    assert list(per_category) == list(suite.categories)
    assert all(c["passed"] == c["total"] and c["success_rate"] == 100.0 for c in per_category.values())
    assert results["protocol"]["allow_hidden_tools"] is True and results["protocol"]["temperature"] == 0.0
    assert results["protocol"]["max_steps_per_turn"] == 20 and results["protocol"]["step_limit"] == "bfcl"
    assert results["interface"]["ref"] == "null" and results["adapter"] is None


def test_tiny_model_end_to_end_writes_records_with_the_training_features(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SEAL_HUB_CACHE", str(tmp_path / "cache"))
    args = ("--model", "tiny", "--limit", "3", "--max_new_tokens", "8", "--max_live_episodes", "2")
    assert _eval(tmp_path / "a", *args) == 0
    suite_name, average, count = _last_line(capsys).groups()
    assert (suite_name, count) == ("bfcl", "3")
    results = json.loads((tmp_path / "a" / "results.json").read_text())
    assert f"{results['scores']['average']:.2f}" == average
    assert results["model"]["id"] == "tiny" and results["protocol"]["max_new_tokens"] == 8
    assert pq.read_schema(tmp_path / "a" / "trajectories.parquet").names == list(FEATURES)
    assert pq.read_schema(tmp_path / "a" / "diagnoses.parquet").names == list(DIAGNOSIS_FEATURES)
    trajectories = read_trajectories(tmp_path / "a" / "trajectories.parquet")
    assert [t.task_id for t in trajectories] == results["task_ids"]
    assert all(t.num_generated_tokens > 0 and t.interface_version == "v0" for t in trajectories)
    # greedy: a second run (other batch size) generates exactly the same tokens
    other = ("--model", "tiny", "--limit", "3", "--max_new_tokens", "8", "--max_live_episodes", "3")
    assert _eval(tmp_path / "b", *other) == 0
    again = read_trajectories(tmp_path / "b" / "trajectories.parquet")
    assert [t.token_ids for t in again] == [t.token_ids for t in trajectories]


def test_an_interrupted_evaluation_resumes_the_missing_tasks_only(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    original = runners_module.OracleRunner.trajectory
    calls: list[str] = []

    def interrupted(self, task):
        if len(calls) == 4:
            raise KeyboardInterrupt
        calls.append(task.id)
        return original(self, task)

    monkeypatch.setattr(runners_module.OracleRunner, "trajectory", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _eval(out, "--model", "oracle", "--limit", "10")
    assert sorted(p.stem for p in (out / "records").iterdir()) == sorted(calls)
    assert not (out / "results.json").exists()

    first_run = list(calls)
    calls.clear()

    def counted(self, task):
        calls.append(task.id)
        return original(self, task)

    monkeypatch.setattr(runners_module.OracleRunner, "trajectory", counted)
    assert _eval(out, "--model", "oracle", "--limit", "10") == 0
    assert _last_line(capsys).groups() == ("bfcl", "100.00", "10")
    assert not set(calls) & set(first_run) and len(calls) == 6  # nothing redone
    results = json.loads((out / "results.json").read_text())
    assert results["resumed_tasks"] == 4
    ids = [t.task_id for t in read_trajectories(out / "trajectories.parquet")]
    assert ids == results["task_ids"] and len(set(ids)) == 10  # nothing duplicated

    calls.clear()  # a complete directory: rerunning scores again without running anything
    assert _eval(out, "--model", "oracle", "--limit", "10") == 0 and calls == []


def test_resuming_with_other_settings_is_a_one_line_error(tmp_path, capsys):
    out = tmp_path / "out"
    assert _eval(out, "--model", "oracle", "--limit", "2") == 0
    capsys.readouterr()
    code = _eval(out, "--model", "oracle", "--limit", "2", "--max_new_tokens", "64")
    err = capsys.readouterr().err
    assert code == 2 and "other settings (protocol differ)" in err and err.count("\n") == 1


def test_a_corrupt_task_record_is_named(tmp_path, capsys):
    out = tmp_path / "out"
    assert _eval(out, "--model", "oracle", "--limit", "2") == 0
    record = next((out / "records").iterdir())
    record.write_text("{not json")
    capsys.readouterr()
    assert _eval(out, "--model", "oracle", "--limit", "2") == 2
    err = capsys.readouterr().err
    assert record.name in err and "delete it" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--suite", "nope"], "unknown suite 'nope'"),
        (["--split", "validation"], "unknown split 'validation'"),
        (["--split_file", "CORRUPT"], "is not readable JSON"),
        (["--split_file", "/nonexistent/split.json"], "does not exist"),
        (["--limit", "0"], "--limit must be >= 1"),
        (["--interface", "not a ref"], "not 'namespace/name'"),
        (["--adapter", "local://alice/no-such-adapter@iter-1"], "alice/no-such-adapter"),
        (["--adapter", "alice/x@"], "nothing after '@'"),
    ],
)
def test_bad_input_is_a_one_line_error(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(tmp_path / "registry"))
    monkeypatch.setenv("SEAL_HUB_BACKEND", "local")
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text("{oops")
    argv = [str(corrupt) if a == "CORRUPT" else a for a in argv]
    model = ["--model", "tiny"] if "--adapter" in argv else ["--model", "oracle"]
    monkeypatch.setenv("SEAL_HUB_CACHE", str(tmp_path / "cache"))
    code = main(["eval", "--output_dir", str(tmp_path / "out"), "--no_progress", *model, *argv])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err and err.count("\n") == 1, err


def test_an_interface_snapshot_file_is_recorded_with_its_version_and_hash(tmp_path, capsys):
    from helpers.hub_artifacts import snapshots

    evolved = snapshots()[1]
    path = evolved.save(tmp_path / "v1.json")
    assert _eval(tmp_path / "out", "--model", "oracle", "--limit", "2", "--interface", str(path)) == 0
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["interface"] == {"ref": str(path), "version": "v1", "content_hash": evolved.content_hash}
    trajectories = read_trajectories(tmp_path / "out" / "trajectories.parquet")
    assert {t.interface_version for t in trajectories} == {"v1"}
