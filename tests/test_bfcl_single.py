"""bfcl-single: the answer key passes bfcl-eval's own checker, wrong answers fail, the engine runs it, bad input."""

from __future__ import annotations

import json

import pytest
from helpers.extras import require_bfcl
from helpers.oracle_script import oracle_script
from helpers.scripted import ScriptedBackend

from seal_hub.envs.bfcl_single import BfclSingleSuite, SingleTaskDataError
from seal_hub.envs.bfcl_single.tasks import _task
from seal_hub.envs.builtin import load_suite
from seal_hub.envs.protocol import Action, ToolCall
from seal_hub.envs.suite import Suite, SuiteError
from seal_hub.generation.backend import SamplingConfig
from seal_hub.generation.hf import HFBackend
from seal_hub.rollout.engine import PolicyInfo, RolloutConfig, RolloutEngine

require_bfcl()

# Answer-key entries no call can satisfy (measured; each reason checked by hand against the data):
KEY_DEFECTS = {
    "parallel_multiple_26": "key accepts `type` for bank.calculate_balance, which the function does not declare",
    "live_simple_106-63-0": "required `auto_loan_payment_start` / `bank_hours_start` accept no value ([])",
    "live_simple_112-68-0": "required parameters accept no value ([])",
    "live_multiple_507-149-4": "required `origin_airport` accepts only '' (omitted)",
    "live_multiple_862-181-3": "key passes `journey_start_time`, which Trains_1_FindTrains does not declare",
    "live_multiple_964-207-0": "key passes `question`; the function requires `statement`",
}


@pytest.fixture(scope="module")
def single():
    return load_suite("bfcl-single")


def play_oracle(suite, task):
    episode = suite.episode(task)
    episode.reset()
    for action in suite.oracle_steps(task)[0]:
        episode.step(action)
    if not episode.done:
        episode.step(Action(content="Done."))
    return episode.verdict


def sample(suite, per_category=3):
    ids = [i for c in suite.categories for i in suite.split_ids(c)[:per_category]]
    return ids + [i for i in KEY_DEFECTS if i not in ids]


def test_the_answer_key_passes_on_a_sample_and_the_known_defects_fail(single):
    assert isinstance(single, Suite)
    for task in single.select(sample(single)):
        verdict = play_oracle(single, task)
        assert verdict.passed == (task.id not in KEY_DEFECTS), (task.id, verdict.error_type)


@pytest.mark.slow
def test_the_answer_key_passes_everywhere_but_the_known_defects(single):
    failed = {t.id for t in single.tasks.values() if not play_oracle(single, t).passed}
    assert failed == set(KEY_DEFECTS)
    keyed = [t for t in single.tasks.values() if t.possible_answer is not None]
    assert len(keyed) == 2351 and len(single) == len(keyed) + 240 + 884 + 16


def test_wrong_answers_fail_by_bfcl_rules(single):
    simple = single.task("simple_python_0")
    [[oracle]] = single.oracle_steps(simple)
    [call] = oracle.tool_calls
    wrong = ToolCall(call.name, {**call.arguments, next(iter(call.arguments)): 123456789})
    cases = [
        (simple, Action(tool_calls=(wrong,)), "value_error"),
        (simple, Action(content="The area is 25."), "ast_decoder:decoder_failed"),
        (simple, Action(tool_calls=(ToolCall(call.name, "not json"),)), "ast_decoder:decoder_wrong_output_format"),
        (single.task("irrelevance_0"), Action(tool_calls=(wrong,)), "irrelevance_error:decoder_success"),
        (single.split_ids("live_relevance")[0], Action(content="I cannot."), "relevance_error:decoder_failed"),
    ]
    for task, action, error in cases:
        episode = single.episode(task)
        episode.reset()
        result = episode.step(action)
        assert result.done and result.reward == 0.0
        assert episode.verdict.turns[0].error_type.startswith(error), episode.verdict.turns[0]


def test_an_episode_is_one_answer(single):
    episode = single.episode("simple_python_0")
    observation = episode.reset()
    assert observation.messages[-1].role == "user" and observation.tools[0]["type"] == "function"
    episode.step(Action(content="no idea"))
    with pytest.raises(RuntimeError, match="finished"):
        episode.step(Action(content="again"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from seal_hub.models.tiny import build_tiny_model

    path = build_tiny_model(tmp_path_factory.mktemp("tiny"))
    return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)


def test_the_rollout_engine_runs_the_suite(single, tiny):
    model, tokenizer = tiny
    tasks = single.select(["simple_python_0", "parallel_0", "irrelevance_0", "live_multiple_0-0-0"])
    config = RolloutConfig(sampling=SamplingConfig(temperature=0, max_new_tokens=1024))
    scripted = RolloutEngine(ScriptedBackend(tokenizer, oracle_script(single)), tokenizer, single, config)
    trajectories = scripted.run(tasks)
    assert [t.reward for t in trajectories] == [1.0] * 4
    assert [t.category for t in trajectories] == ["simple", "parallel", "irrelevance", "live_multiple"]
    assert all(t.turns[0].verdict.passed for t in trajectories)
    backend = HFBackend(model, [tokenizer.eos_token_id], tokenizer.pad_token_id)
    sampling = RolloutConfig(sampling=SamplingConfig(temperature=0, max_new_tokens=16))
    tiny_runs = RolloutEngine(backend, tokenizer, single, sampling, PolicyInfo("tiny")).run(tasks)
    assert [t.task_id for t in tiny_runs] == [t.id for t in tasks]
    for trajectory in tiny_runs:
        assert trajectory.num_steps == 1 and trajectory.turns[0].verdict is not None
        assert trajectory.reward == float(trajectory.turns[0].verdict.passed)
        assert trajectory.interface_version == "v0"


def test_bad_splits_are_one_line_errors(single, tmp_path):
    with pytest.raises(
        SuiteError, match="unknown split 'tarin' for suite bfcl-single; choose train, test, all or a category"
    ):
        single.split_ids("tarin")
    halves = len(single.split_ids("train")) + len(single.split_ids("test"))
    assert halves == len(single.split_ids("all")) == len(single)
    corrupt = tmp_path / "split.json"
    corrupt.write_text("{not json")
    with pytest.raises(SuiteError, match="bfcl-single: split file .* is not readable JSON") as error:
        single.split_ids("test", str(corrupt))
    assert "\n" not in str(error.value)
    corrupt.write_text(json.dumps({"train": [], "test": ["simple_python_0", "nope"]}))
    with pytest.raises(SuiteError, match="unknown task ids"):
        single.split_ids("test", str(corrupt))
    with pytest.raises(SuiteError, match="unknown suite 'bfcl-singel'; choose one of: bfcl, bfcl-single"):
        load_suite("bfcl-singel")


def test_corrupt_package_data_says_how_to_fix_it():
    entry = {"id": "simple_python_0", "question": [[{"role": "user"}]], "function": []}
    with pytest.raises(SingleTaskDataError, match="simple_python_0.*pip install --force-reinstall 'bfcl-eval=="):
        _task("simple", entry, None)
    assert BfclSingleSuite(tasks={}).split_ids("all") == ()
