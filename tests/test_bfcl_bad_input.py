"""Bad input from the model: each becomes a labelled observation, never a crash, and runs nothing hidden."""

from __future__ import annotations

import pytest
from helpers.extras import require_bfcl

from seal_hub.envs.bfcl import EpisodeConfig
from seal_hub.envs.bfcl.execution import instantiate
from seal_hub.envs.bfcl.verifier import public_state
from seal_hub.envs.protocol import Action, ErrorKind, ParseError, ToolCall

require_bfcl()

FS_TASK = "multi_turn_base_0"  # GorillaFileSystem + TwitterAPI; 'cp' is excluded
MISS_FUNC_TASK = "multi_turn_miss_func_0"  # 'sort' is withheld until turn 3


def run_one(suite, call: ToolCall, task_id: str = FS_TASK, config: EpisodeConfig | None = None):
    episode = suite.episode(task_id, config)
    episode.reset()
    step = episode.step(Action(tool_calls=(call,)))
    assert not step.done
    [result] = step.observation.tool_results
    return episode, result


def state(episode):
    return {name: public_state(instance) for name, instance in episode._instances.items()}


def initial_state(suite, task_id):
    return {name: public_state(instance) for name, instance in instantiate(suite.task(task_id)).items()}


def assert_refused(suite, episode, result, kind, task_id=FS_TASK, *phrases):
    assert result.error_kind == kind and not result.executed
    assert result.content.startswith("Error: ")
    for phrase in phrases:
        assert phrase in result.content
    assert episode.outputs == ()
    assert state(episode) == initial_state(suite, task_id)


def test_unknown_tool(suite):
    episode, result = run_one(suite, ToolCall("delete_everything", {}))
    assert_refused(suite, episode, result, ErrorKind.UNKNOWN_TOOL, FS_TASK, "unknown tool 'delete_everything'", "ls")


@pytest.mark.parametrize("name", ["__import__", "_load_scenario", "eval", "__class__", "exec", "reset", "__init__"])
def test_dangerous_names_are_unknown_tools(suite, name):
    episode, result = run_one(suite, ToolCall(name, {"root": {}}))
    assert_refused(suite, episode, result, ErrorKind.UNKNOWN_TOOL)


@pytest.mark.parametrize("name", [None, 42, ""])
def test_a_call_without_a_usable_name(suite, name):
    episode, result = run_one(suite, ToolCall(name, {}))
    assert_refused(suite, episode, result, ErrorKind.UNKNOWN_TOOL)


def test_withheld_tool_is_refused_until_its_turn_and_runs_with_the_flag(suite):
    call = ToolCall("sort", {"file_name": "final_report.pdf"})
    episode, result = run_one(suite, call, MISS_FUNC_TASK)
    assert_refused(suite, episode, result, ErrorKind.WITHHELD_TOOL, MISS_FUNC_TASK, "not available at this point")
    _, result = run_one(suite, call, MISS_FUNC_TASK, EpisodeConfig(allow_hidden_tools=True))
    assert result.executed and result.error_kind in (None, ErrorKind.BAD_PATH)


def test_excluded_tool_is_refused_and_runs_with_the_flag(suite):
    call = ToolCall("cp", {"source": "x", "destination": "y"})
    episode, result = run_one(suite, call)
    assert_refused(suite, episode, result, ErrorKind.EXCLUDED_TOOL, FS_TASK, "not available in this task")
    _, result = run_one(suite, call, config=EpisodeConfig(allow_hidden_tools=True))
    assert result.executed and "cp: cannot copy" in result.content


def test_missing_argument(suite):
    episode, result = run_one(suite, ToolCall("cd", {}))
    assert_refused(suite, episode, result, ErrorKind.MISSING_ARGUMENT, FS_TASK, "'folder'")


def test_unexpected_argument(suite):
    episode, result = run_one(suite, ToolCall("cd", {"folder": "workspace", "force": True}))
    assert_refused(suite, episode, result, ErrorKind.UNEXPECTED_ARGUMENT, FS_TASK, "'force'", "folder")


def test_ill_typed_argument_runs_as_in_bfcl_with_a_label(suite):
    episode, result = run_one(suite, ToolCall("mkdir", {"dir_name": 12}))
    assert result.executed and result.error_kind == ErrorKind.WRONG_TYPE
    assert result.note == "argument 'dir_name' must be of type string, got integer"
    assert len(episode.outputs) == 1 and result.content == episode.outputs[0]


def test_ill_typed_argument_is_refused_when_asked(suite):
    config = EpisodeConfig(reject_ill_typed=True)
    episode, result = run_one(suite, ToolCall("mkdir", {"dir_name": 12}), config=config)
    assert_refused(suite, episode, result, ErrorKind.WRONG_TYPE, FS_TASK, "must be of type string")
    episode, result = run_one(suite, ToolCall("mean", {"numbers": [1, "2"]}), "multi_turn_base_15", config)
    assert_refused(suite, episode, result, ErrorKind.WRONG_TYPE, "multi_turn_base_15", "numbers[1]")
    episode, result = run_one(suite, ToolCall("mkdir", {"dir_name": True}), config=config)
    assert result.error_kind == ErrorKind.WRONG_TYPE


@pytest.mark.parametrize("arguments", [["workspace"], 3, "not json {", '["a"]', "null-ish", True])
def test_arguments_that_are_not_a_json_object(suite, arguments):
    episode, result = run_one(suite, ToolCall("cd", arguments))
    assert_refused(suite, episode, result, ErrorKind.ARGUMENTS_NOT_OBJECT, FS_TASK, "JSON object")


def test_arguments_as_a_json_string_are_decoded(suite):
    _, result = run_one(suite, ToolCall("cd", '{"folder": "document"}'))
    assert result.executed and result.error_kind is None


def test_a_tool_that_raises(suite):
    task = next(t for t in suite.tasks.values() if "TravelAPI" in t.involved_classes)
    call = ToolCall(
        "get_flight_cost",
        {"travel_from": "ZZZ", "travel_to": "YYY", "travel_date": "2024-11-15", "travel_class": "economy"},
    )
    episode, result = run_one(suite, call, task.id)
    assert result.executed and result.error_kind == ErrorKind.TOOL_EXCEPTION
    assert result.content == "Error during execution: No available route for the given airports."
    assert episode.outputs == (result.content,)  # recorded as bfcl-eval records it


def test_a_tool_error_payload_is_classified(suite):
    _, result = run_one(suite, ToolCall("cd", {"folder": "no_such_folder"}))
    assert result.executed and result.error_kind == ErrorKind.BAD_PATH


def test_a_1mb_string_argument(suite):
    episode, result = run_one(suite, ToolCall("mkdir", {"dir_name": "x" * 1_000_000}))
    assert_refused(suite, episode, result, ErrorKind.ARGUMENT_TOO_LARGE, FS_TASK, "longer than 65536 characters")
    assert len(result.content) < 200


def test_a_1mb_tool_name_is_not_echoed_back(suite):
    episode, result = run_one(suite, ToolCall("y" * 1_000_000, {}))
    assert_refused(suite, episode, result, ErrorKind.UNKNOWN_TOOL)
    assert len(result.content) < 2_000


def test_parse_errors_come_back_as_observations_and_count_as_steps(suite):
    episode = suite.episode(FS_TASK, EpisodeConfig(max_steps_per_turn=2))
    episode.reset()
    action = Action(content="<tool_call>{oops", parse_errors=(ParseError("invalid_json", "Expecting value"),))
    step = episode.step(action)
    [result] = step.observation.tool_results
    assert result.call is None and result.error_kind == ErrorKind.PARSE_ERROR and "invalid_json" in result.content
    assert step.observation.turn_index == 0
    episode.step(action)
    assert episode.step(action).truncated
    ends = suite.episode(FS_TASK, EpisodeConfig(end_turn_on_parse_error=True))
    ends.reset()
    assert ends.step(action).observation.turn_index == 1  # BFCL's loop: an undecodable answer ends the turn
    assert ends.verdict.turns[0].model_calls == 0


def test_good_calls_in_a_step_with_bad_ones_still_run(suite):
    episode = suite.episode(FS_TASK)
    episode.reset()
    step = episode.step(Action(tool_calls=(ToolCall("nope", {}), ToolCall("ls", {}), ToolCall("cd", 5))))
    kinds = [r.error_kind for r in step.observation.tool_results]
    assert kinds == [ErrorKind.UNKNOWN_TOOL, None, ErrorKind.ARGUMENTS_NOT_OBJECT]
    assert len(episode.outputs) == 1
