"""Tasks from the installed bfcl-eval, tool schemas, and splits."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from helpers.extras import require_bfcl
from helpers.paths import PAPER_SPLIT

from seal_hub.envs.bfcl import CATEGORIES, SplitError, class_tools, load_split, stratified_split
from seal_hub.envs.bfcl.tasks import TaskDataError, parse_call_string

require_bfcl()


def test_800_tasks_200_per_category(suite):
    assert len(suite) == 800
    assert Counter(t.category for t in suite.tasks.values()) == {c: 200 for c in CATEGORIES}


def test_task_record_fields(suite):
    from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC as sent

    task = suite.task("multi_turn_miss_func_0")
    assert task.category == "miss_func"
    assert set(task.involved_classes) == {"GorillaFileSystem", "TwitterAPI"}
    assert dict(task.withheld_until) == {3: ("sort",)}
    assert task.turns[3] == ()  # the reveal turn has no user text in the data ...
    assert task.user_messages(3)[0].content == sent  # ... BFCL's FC handler sends this
    assert task.ground_truth[3][0].name == "sort"  # the withheld tool is used at its turn
    assert len(task.ground_truth) == task.num_turns == len(task.ground_truth_source)
    assert "GorillaFileSystem" in task.initial_config
    assert suite.task("multi_turn_base_0").excluded_functions == {"cp"}
    assert sum(1 for t in suite.tasks.values() if t.long_context) == 200


def test_positional_ground_truth_arguments_get_their_names(suite):
    task = suite.task("multi_turn_miss_func_0")
    [sort] = [c for turn in task.ground_truth for c in turn if c.name == "sort"]
    assert sort.arguments == {"file_name": "final_report.pdf"}
    call = parse_call_string("logarithm(20, base=10, precision=2)", ("MathAPI",))
    assert call.arguments == {"value": 20, "base": 10, "precision": 2}


@pytest.mark.parametrize("bad", ["__import__('os').system('x')", "a.b(1)", "f(**x)", "not python(", "x = 1"])
def test_ground_truth_strings_are_parsed_never_evaluated(bad):
    with pytest.raises(TaskDataError):
        parse_call_string(bad, ("MathAPI",))


def test_tool_schemas_are_json_schema():
    bfcl_only = {"dict", "float", "tuple", "any"}
    for class_name in ("GorillaFileSystem", "MathAPI", "TicketAPI", "TwitterAPI", "VehicleControlAPI"):
        for tool in class_tools(class_name):
            schema = tool.schema
            assert schema["type"] == "function" and schema["function"]["name"] == tool.name
            params = schema["function"]["parameters"]
            assert params["type"] == "object"
            text = json.dumps(schema)
            assert not any(f'"type": "{t}"' in text for t in bfcl_only), text
            assert "response" not in schema["function"]
    [mean] = [t for t in class_tools("MathAPI") if t.name == "mean"]
    assert mean.schema["function"]["parameters"]["properties"]["numbers"] == {
        "type": "array",
        "items": {"type": "number"},
        "description": "List of numbers to calculate the mean of. ",
    }
    [edit] = [t for t in class_tools("TicketAPI") if t.name == "edit_ticket"]
    assert edit.schema["function"]["parameters"]["properties"]["updates"]["type"] == "object"
    assert edit.doc["parameters"]["type"] == "dict"  # BFCL's original stays available


def test_paper_split_loads(suite):
    split = load_split(PAPER_SPLIT, known_ids=set(suite.tasks))
    assert len(split.train) == len(split.test) == 400
    for ids in (split.train, split.test):
        assert Counter(suite.task(i).category for i in ids) == {c: 100 for c in CATEGORIES}
    assert not set(split.train) & set(split.test)


def test_stratified_split_is_deterministic_and_stratified(suite):
    a = stratified_split(suite.tasks, train_per_category=100, seed=0)
    b = stratified_split(suite.tasks, train_per_category=100, seed=0)
    c = stratified_split(suite.tasks, train_per_category=100, seed=1)
    assert a == b and a.train != c.train
    assert Counter(suite.task(i).category for i in a.train) == {cat: 100 for cat in CATEGORIES}
    assert set(a.train) | set(a.test) == set(suite.tasks) and not set(a.train) & set(a.test)
    small = stratified_split(suite.tasks, train_per_category=5, seed=0)
    assert len(small.train) == 20 and len(small.test) == 780
    with pytest.raises(ValueError, match="train_per_category"):
        stratified_split(suite.tasks, train_per_category=201)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not readable JSON"),
        ('["a"]', "expected an object"),
        ('{"train": "x", "test": []}', "'train' must be a list"),
        ('{"train": ["multi_turn_base_0"], "test": ["nope_1"]}', "unknown task ids"),
        ('{"train": ["multi_turn_base_0"], "test": ["multi_turn_base_0"]}', "in both train and test"),
        ('{"train": ["multi_turn_base_0", "multi_turn_base_0"], "test": []}', "repeats"),
    ],
)
def test_bad_split_files_name_the_file_and_the_field(tmp_path, suite, content, message):
    path = tmp_path / "split.json"
    path.write_text(content)
    with pytest.raises(SplitError, match=message) as info:
        load_split(path, known_ids=set(suite.tasks))
    assert str(path) in str(info.value)
    with pytest.raises(SplitError, match="does not exist"):
        load_split(tmp_path / "missing.json")
