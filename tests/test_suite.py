"""The suite contract: BFCL speaks it, unknown suites fail in one line, the paper's split ships with the package."""

import json
from pathlib import Path

import pytest
from helpers.extras import require_bfcl

from seal_hub.envs.bfcl import BfclSuite, paper_split, replay, resolve_split
from seal_hub.envs.builtin import load_suite
from seal_hub.envs.protocol import Action
from seal_hub.envs.suite import SuiteError

require_bfcl()


def test_bfcl_is_a_suite_and_its_oracle_passes(suite):
    assert load_suite("bfcl").name == "bfcl"
    task = suite.task("multi_turn_miss_param_3")
    # every member of the Suite contract answers as the engine reads it
    assert (task.id, task.category) == ("multi_turn_miss_param_3", "miss_param") and task.category in suite.categories
    assert suite.select([task.id, "multi_turn_base_0"]) == [task, suite.tasks["multi_turn_base_0"]]
    assert set(suite.split_ids("train")) | set(suite.split_ids("test")) == set(suite.tasks)
    episode = suite.episode(task.id)
    first = episode.reset()
    assert episode.task is task and first.turn_index == 0 and first.messages and first.tools and not episode.done
    assert episode.step(Action(content="I cannot do that.")).observation.turn_index == 1  # a reply ends the turn
    episode.close()
    steps = [[list(action.tool_calls) for action in turn] for turn in suite.oracle_steps(task)]
    assert all(isinstance(a, Action) for turn in suite.oracle_steps(task) for a in turn)
    from seal_hub.envs.bfcl import EpisodeConfig

    assert replay(suite.episode(task, EpisodeConfig(allow_hidden_tools=True)), steps).passed


def test_unknown_suite_is_a_one_line_error():
    with pytest.raises(SuiteError, match="unknown suite 'nope'; choose one of: bfcl"):
        load_suite("nope")


def test_the_paper_split_ships_and_is_the_default(suite: BfclSuite):
    split = paper_split(set(suite.tasks))
    assert len(split.train) == len(split.test) == 400
    assert not set(split.train) & set(split.test)
    for category in suite.categories:
        assert sum(suite.task(i).category == category for i in split.train) == 100
    assert suite.split_ids("test") == split.test
    assert resolve_split(None) == resolve_split("paper") == split
    assert suite.split_ids("train", "stratified") != split.train
    assert len(suite.split_ids("all")) == 800


def test_a_split_file_by_path_still_works(suite, tmp_path: Path):
    path = tmp_path / "split.json"
    path.write_text(json.dumps({"train": ["multi_turn_base_0"], "test": ["multi_turn_base_1"]}))
    assert suite.split_ids("test", str(path)) == ("multi_turn_base_1",)
