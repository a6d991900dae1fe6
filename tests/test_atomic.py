"""seal_hub.atomic: a write that fails leaves the old file and no temporary file behind."""

from __future__ import annotations

import json

import pytest

from seal_hub.atomic import write_json, write_text, write_with


def test_a_write_replaces_the_file_and_leaves_nothing_else(tmp_path):
    target = tmp_path / "deep" / "record.json"
    write_json(target, {"b": 1, "a": 2})
    write_json(target, {"step": 3})
    assert json.loads(target.read_text()) == {"step": 3} and target.read_text().endswith("\n")
    assert [p.name for p in target.parent.iterdir()] == ["record.json"]


def test_a_writer_that_fails_keeps_the_old_file_and_removes_its_temporary(tmp_path):
    target = write_text(tmp_path / "table.md", "old\n")

    def half_then_crash(temp):
        temp.write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_with(target, half_then_crash)
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["table.md"]
