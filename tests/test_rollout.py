"""Batched multi-turn rollouts: exactness against a plain reference, records, and bad model output."""

from __future__ import annotations

import pytest
from baselines import SequentialBackend
from helpers.scripted import ScriptedBackend

from seal_hub.envs.bfcl import EpisodeConfig
from seal_hub.generation.backend import SamplingConfig
from seal_hub.generation.hf import HFBackend
from seal_hub.models.toolcalls import format_tool_calls
from seal_hub.rollout.engine import PolicyInfo, RolloutConfig, RolloutEngine
from seal_hub.rollout.records import read_trajectories, write_trajectories

TASKS = ["multi_turn_base_0", "multi_turn_base_1", "multi_turn_miss_func_0"]
LONG = SamplingConfig(max_new_tokens=1024)  # scripted outputs are never cut


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from seal_hub.models.tiny import build_tiny_model

    path = build_tiny_model(tmp_path_factory.mktemp("tiny"))
    return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)


def engine(backend, tokenizer, suite, **config):
    sampling = config.pop("sampling", SamplingConfig(temperature=0, max_new_tokens=12))
    return RolloutEngine(backend, tokenizer, suite, RolloutConfig(sampling=sampling, **config), PolicyInfo("tiny"))


def ground_truth_script(suite):
    """A "model" that answers each turn with its ground-truth calls, then 'Done.'."""

    def texts(task_id):
        out = []
        for calls in suite.task(task_id).ground_truth:
            if calls:
                out.append(format_tool_calls(calls, "hermes"))
            out.append("Done.")
        return out

    cache = {}
    return lambda session, step, request: cache.setdefault(session, texts(session.split("#")[0]))[step]


def test_batched_cached_engine_equals_the_plain_reference(suite, tiny):
    model, tokenizer = tiny
    tasks = suite.select(TASKS)
    eos = [tokenizer.eos_token_id]
    cached_backend = HFBackend(model, eos, tokenizer.pad_token_id)
    fast = engine(cached_backend, tokenizer, suite, num_generations=2).run(tasks)
    slow = engine(
        SequentialBackend(model, eos, tokenizer.pad_token_id), tokenizer, suite, num_generations=2, max_live_episodes=1
    ).run(tasks)
    assert [t.task_id for t in fast] == [t.task_id for t in slow] == [t for t in TASKS for _ in range(2)]
    for a, b in zip(fast, slow, strict=True):
        assert a.token_ids == b.token_ids
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < 1e-4
    # the shared prefix and each episode's history came from caches, not recomputation
    assert cached_backend.reused_tokens > cached_backend.prefilled_tokens
    # a group's decode steps need its task prefix once; our rows each read it (the memory bound's two counts)
    assert 0 < cached_backend.positions_needed < cached_backend.positions_read


def test_trajectory_token_view_is_consistent(suite, tiny):
    model, tokenizer = tiny
    backend = HFBackend(model, [tokenizer.eos_token_id], tokenizer.pad_token_id, seed=3)
    sampling = SamplingConfig(temperature=1.0, max_new_tokens=20, seed=3)
    [trajectory] = engine(backend, tokenizer, suite, sampling=sampling).run(suite.select(TASKS[:1]))
    n = len(trajectory.token_ids)
    assert len(trajectory.token_mask) == len(trajectory.logprobs) == n
    assert sum(trajectory.token_mask) == trajectory.num_generated_tokens > 0
    assert all(m == 0 for m in trajectory.token_mask[: trajectory.prompt_length])
    assert all((lp <= 0) if m else (lp == 0) for m, lp in zip(trajectory.token_mask, trajectory.logprobs, strict=True))
    task = suite.task(TASKS[0])
    first_prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": task.turns[0][0].content}],
        tools=list(suite.episode(task).reset().tools),
        add_generation_prompt=True,
        tokenize=False,
    )
    assert tokenizer.decode(trajectory.token_ids[: trajectory.prompt_length]) == first_prompt
    assert trajectory.policy_id == "tiny" and trajectory.interface_version == "v0" and trajectory.seed == 3


def test_sampling_is_reproducible_from_the_seed(suite, tiny):
    model, tokenizer = tiny
    sampling = SamplingConfig(temperature=1.0, max_new_tokens=10, seed=7)
    runs = [
        engine(
            HFBackend(model, [tokenizer.eos_token_id], tokenizer.pad_token_id, seed=7),
            tokenizer,
            suite,
            sampling=sampling,
            num_generations=2,
        ).run(suite.select(TASKS[:1]))
        for _ in range(2)
    ]
    assert [t.token_ids for t in runs[0]] == [t.token_ids for t in runs[1]]
    assert runs[0][0].token_ids != runs[0][1].token_ids  # two rollouts of a group differ


def test_ground_truth_policy_through_real_tokenization_earns_reward(suite, tiny, tmp_path):
    _, tokenizer = tiny
    backend = ScriptedBackend(tokenizer, ground_truth_script(suite))
    config = {"episode": EpisodeConfig(allow_hidden_tools=False), "num_generations": 2, "sampling": LONG}
    trajectories = engine(backend, tokenizer, suite, **config).run(suite.select(TASKS))
    assert [t.reward for t in trajectories] == [1.0] * 6
    assert len(backend.released) == 6  # every finished episode freed its cache
    reveal = next(t for t in trajectories if t.task_id == "multi_turn_miss_func_0")
    user_turns = [m.content for m in reveal.messages if m.role == "user"]
    assert '"name": "sort"' in user_turns[3] and user_turns[3].endswith("What about now?")
    assert all(v.passed for turn in reveal.turns for v in [turn.verdict])
    path = write_trajectories(trajectories, tmp_path / "trajectories.parquet")
    assert read_trajectories(path) == trajectories


def test_a_prompt_longer_than_the_context_is_a_labelled_truncation(suite, tiny):
    _, tokenizer = tiny
    backend = ScriptedBackend(tokenizer, lambda *_: "Done.")
    [trajectory] = engine(backend, tokenizer, suite, max_context_tokens=200).run(suite.select(TASKS[:1]))
    assert trajectory.truncated and trajectory.truncation == "context_limit"
    assert trajectory.reward == 0.0 and trajectory.num_steps == 0
    assert trajectory.error_type == "multi_turn:force_terminated"


def test_generation_cut_by_the_context_end_is_recorded(suite, tiny):
    _, tokenizer = tiny
    task = suite.task(TASKS[0])
    backend = ScriptedBackend(tokenizer, lambda *_: "word " * 5000)
    [trajectory] = engine(
        backend, tokenizer, suite, max_context_tokens=4600, sampling=SamplingConfig(max_new_tokens=4000)
    ).run([task])
    assert len(trajectory.token_ids) <= 4600
    assert trajectory.truncation == "context_limit" and trajectory.reward == 0.0
    assert trajectory.turns[0].steps[0].finished is False


@pytest.mark.parametrize(
    ("text", "check"),
    [
        (None, lambda step: step.text == "" and step.num_tokens == 0 and not step.tool_calls),
        ("", lambda step: step.text == "" and step.num_tokens == 1 and step.finished),
        ('<tool_call>{"name": "ls", "arguments": {', lambda step: step.parse_errors[0].kind == "unclosed_tag"),
    ],
    ids=["empty", "eos_only", "unclosed_tag"],
)
def test_degenerate_generations_are_recorded_as_what_they_are(suite, tiny, text, check):
    _, tokenizer = tiny
    backend = ScriptedBackend(tokenizer, lambda session, step, request: text if step == 0 else "Done.")
    [trajectory] = engine(backend, tokenizer, suite, sampling=LONG).run(suite.select(TASKS[:1]))
    first = trajectory.turns[0].steps[0]
    assert check(first), first
    assert trajectory.reward == 0.0 and not trajectory.truncated
    if first.parse_errors:
        assert first.results[0].error_kind == "parse_error"  # fed back, the turn goes on
        assert len(trajectory.turns[0].steps) == 2
    else:
        assert trajectory.turns[0].verdict.error_type == "multi_turn:empty_turn_model_response"


def test_repeated_tasks_are_separate_episodes_in_input_order(suite, tiny):
    """A trainer hands over each prompt repeated once per generation: each entry is its own rollout."""
    _, tokenizer = tiny
    backend = ScriptedBackend(tokenizer, lambda *_: "Done.")
    tasks = suite.select([TASKS[0], TASKS[0], TASKS[1], TASKS[1]])
    trajectories = engine(backend, tokenizer, suite, sampling=LONG).run(tasks)
    assert [(t.task_id, t.rollout_index) for t in trajectories] == [
        (TASKS[0], 0),
        (TASKS[0], 1),
        (TASKS[1], 0),
        (TASKS[1], 1),
    ]
    assert len(set(backend.released)) == 4


def test_the_learning_interface_shapes_what_the_agent_sees(suite, tiny):
    from seal_hub.diagnosis import FailureProfile, Label, LabelStats
    from seal_hub.interface import InterfaceSnapshot
    from seal_hub.interface.evolve import evolve

    _, tokenizer = tiny
    profile = FailureProfile({Label.MISSING_TOOL_CALL: LabelStats(20, 0.5, 0.1)}, rollouts=10, turns=40)
    interface = evolve(InterfaceSnapshot.null(), profile)
    assert interface.version == "v1" and interface.system_prompt()

    def script(session, step, request):
        return '<tool_call>{"name": "cd", "arguments": {"folder": "nowhere"}}</tool_call>' if step == 0 else "Done."

    runner = RolloutEngine(
        ScriptedBackend(tokenizer, script),
        tokenizer,
        suite,
        RolloutConfig(sampling=LONG),
        PolicyInfo("tiny"),
        interface=interface,
    )
    [trajectory] = runner.run(suite.select(TASKS[:1]))
    assert trajectory.interface_version == "v1"
    # the interface's note and guidelines follow the template's own system line, which they do not replace
    default = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
    assert trajectory.messages[0].role == "system"
    assert trajectory.messages[0].content == f"{default}\n\n{interface.system_prompt()}"
    prompt = tokenizer.decode(trajectory.token_ids[: trajectory.prompt_length])
    assert "[required]" in prompt and f"{default}\n\n{interface.system_prompt()}" in prompt
    [plain] = engine(ScriptedBackend(tokenizer, script), tokenizer, suite, sampling=LONG).run(suite.select(TASKS[:1]))
    plain_prompt = tokenizer.decode(plain.token_ids[: plain.prompt_length])
    assert plain.messages[0].role == "user" and plain_prompt.startswith(prompt.split(default)[0] + default)
    tool_message = next(m for m in trajectory.messages if m.role == "tool")
    assert "No such file or directory" in tool_message.content and "Hint:" in tool_message.content
    # the step record keeps the raw result; the hint is only what the agent was shown
    assert "Hint:" not in trajectory.turns[0].steps[0].results[0].content


def test_the_interface_adds_its_system_text_to_the_conversations_own():
    from seal_hub.diagnosis import FailureProfile, Label, LabelStats
    from seal_hub.envs.protocol import Message, Observation
    from seal_hub.interface import InterfaceSnapshot
    from seal_hub.interface.evolve import evolve
    from seal_hub.rollout.engine import first_messages

    user = Observation(0, (Message("user", "Lights on in the kitchen."),))
    tasked = Observation(0, (Message("system", "You are the house's assistant."), *user.messages))
    null = InterfaceSnapshot.null()
    profile = FailureProfile({Label.MISSING_TOOL_CALL: LabelStats(20, 0.5, 0.1)}, rollouts=10, turns=40)
    text = evolve(null, profile).system_prompt()
    assert text
    cued = evolve(null, profile)
    # the null interface (plain GRPO, evaluation) leaves the task's messages as they are
    assert first_messages(null, user, "Default line.")[0] == [{"role": "user", "content": "Lights on in the kitchen."}]
    # a system text goes after the template's default line, or alone where the template has none
    messages, _ = first_messages(cued, user, "Default line.")
    assert messages[0] == {"role": "system", "content": f"Default line.\n\n{text}"} and messages[1]["role"] == "user"
    assert first_messages(cued, user)[0][0] == {"role": "system", "content": text}
    # and after the task's own system message, in it: one system message
    messages, _ = first_messages(cued, tasked, "Default line.")
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"] == f"You are the house's assistant.\n\n{text}"


def test_an_episode_cut_by_its_step_budget_still_labels_every_turn(suite, tiny):
    from seal_hub.diagnosis import Label

    _, tokenizer = tiny
    task = suite.task("multi_turn_base_0")
    assert task.ground_truth[0] and task.ground_truth[1]  # turn 0: calls + "Done." (2 steps); turn 1 is cut
    backend = ScriptedBackend(tokenizer, ground_truth_script(suite))
    config = {"episode": EpisodeConfig(max_steps_per_episode=3), "sampling": LONG}
    [trajectory] = engine(backend, tokenizer, suite, **config).run([task])
    assert trajectory.truncated and trajectory.truncation == "step_limit" and trajectory.reward == 0.0
    assert trajectory.num_steps == 3 and len(trajectory.turns) == 2
    labels = suite.diagnose(trajectory, task).labels
    rest = [Label.MISSING_TOOL_CALL if calls else Label.CORRECT_ABSTENTION for calls in task.ground_truth[2:]]
    assert list(labels) == [Label.PASS, Label.MISSING_TOOL_CALL, *rest]
    assert len(labels) == task.num_turns


@pytest.mark.parametrize("backend_type", [HFBackend, SequentialBackend])
def test_weights_gathered_during_generation_still_train(tiny, backend_type):
    """ZeRO-3 without ds3_gather_for_generation fetches parameters inside generation; under inference mode they
    would become inference tensors and the next training forward would fail to save them for backward. The
    backends generate under no_grad (as TRL does), so a parameter re-materialised mid-generation still trains."""
    import copy

    import torch

    from seal_hub.generation.backend import GenerationRequest

    model, tokenizer = tiny
    model = copy.deepcopy(model)
    layer = model.model.layers[0].mlp.down_proj

    def gather(module, args):  # what a ZeRO-3 fetch does to a partitioned parameter: new storage, made here
        module.weight.data = module.weight.data.clone()

    hook = layer.register_forward_pre_hook(gather)
    backend = backend_type(model, [tokenizer.eos_token_id], tokenizer.pad_token_id)
    request = GenerationRequest(session="s", token_ids=(1, 2, 3, 4), prefix_length=0)
    backend.generate([request], SamplingConfig(temperature=0, max_new_tokens=3))
    hook.remove()
    assert not layer.weight.is_inference()
    model.train()
    loss = model(input_ids=torch.tensor([[1, 2, 3, 4]]), labels=torch.tensor([[1, 2, 3, 4]])).loss
    loss.backward()
    assert layer.weight.grad is not None
