"""Generation correctness: every end token stops generating, sampling is model.generate's, styles follow templates."""

from __future__ import annotations

import copy

import pytest
import torch
from baselines import SequentialBackend
from helpers.scripted import ScriptedBackend
from helpers.template_models import LLAMA_END_TOKENS, PYTHONIC_TEMPLATE, build_tiny_llama, load
from scipy import stats

from seal_hub.envs.protocol import ToolCall
from seal_hub.generation import GenerationRequest, HFBackend, SamplingConfig
from seal_hub.generation.sampling import generate_kwargs, logits_processors
from seal_hub.models import end_token_ids, template_end_of_turn
from seal_hub.models.chat_templates import trl_chat_template
from seal_hub.models.parser_style import (
    ParserStyleError,
    infer_parser_style,
    resolve_parser_style,
    style_from_rendering,
)
from seal_hub.models.toolcalls import format_tool_calls
from seal_hub.rollout import PolicyInfo, RolloutConfig, RolloutEngine

ALPHA = 1e-3  # a correct sampler fails a test at this level once in a thousand seeds; the draws here are seeded
DRAWS = 3000  # first tokens drawn per arm
PROMPT = "List the files in the current directory"
SETTINGS = SamplingConfig(temperature=0.7, top_p=0.9, top_k=20, max_new_tokens=1)


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    from seal_hub.models.tiny import build_tiny_model

    return load(build_tiny_model(tmp_path_factory.mktemp("qwen")))


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return load(build_tiny_llama(tmp_path_factory.mktemp("llama")))


def _forcing(model, token_id: int):
    """A copy of `model` whose every next-token prediction is `token_id` (its LM head's output is overwritten)."""
    forced = copy.deepcopy(model)

    def hook(module, inputs, output):
        output = output.clone()
        output[..., token_id] = output.max() + 50.0
        return output

    forced.lm_head.register_forward_hook(hook)
    return forced


# ----- end tokens -----


def test_end_tokens_are_the_union_of_generation_config_tokenizer_and_template(qwen, llama):
    (qwen_model, qwen_tok), (llama_model, llama_tok) = qwen, llama
    names = lambda tok, ids: set(tok.convert_ids_to_tokens(list(ids)))  # noqa: E731
    assert names(qwen_tok, end_token_ids(qwen_model, qwen_tok)) == {"<|im_end|>", "<|endoftext|>"}
    assert names(llama_tok, end_token_ids(llama_model, llama_tok)) == set(LLAMA_END_TOKENS)
    assert template_end_of_turn(qwen_tok) == "<|im_end|>"
    assert template_end_of_turn(llama_tok) == "<|eot_id|>"
    # the template's end-of-turn counts even where neither the config nor the tokenizer's eos names it
    base = copy.deepcopy(qwen_tok)
    base.eos_token = "<|endoftext|>"
    assert names(base, end_token_ids(None, base)) == {"<|im_end|>", "<|endoftext|>"}
    from transformers import GenerationConfig

    single = GenerationConfig(eos_token_id=qwen_tok.convert_tokens_to_ids("<|endoftext|>"))
    assert names(qwen_tok, end_token_ids(single, qwen_tok)) == {"<|im_end|>", "<|endoftext|>"}


def test_the_default_system_prompt_is_read_from_the_template(qwen, llama):
    from helpers.template_models import PYTHONIC_TEMPLATE

    from seal_hub.models.default_system import template_default_system

    # TRL's Qwen2.5 template writes its own line where a conversation has no system message
    assert template_default_system(qwen[1]) == "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
    # Llama 3.1 writes its date header either way, around an empty system text: no default to keep
    assert template_default_system(llama[1]) is None
    # a template with no system turn without tools, or none at all: nothing to keep
    other = copy.deepcopy(qwen[1])
    other.chat_template = PYTHONIC_TEMPLATE
    assert template_default_system(other) is None
    other.chat_template = None
    assert template_default_system(other) is None


@pytest.mark.parametrize(("family", "second"), [("qwen", "<|endoftext|>"), ("llama", "<|eom_id|>")])
def test_a_generation_that_emits_another_end_token_stops_there(qwen, llama, family, second):
    model, tokenizer = qwen if family == "qwen" else llama
    token = tokenizer.convert_tokens_to_ids(second)
    assert token != tokenizer.eos_token_id
    forced = _forcing(model, token)
    ids = tuple(tokenizer(PROMPT, add_special_tokens=False)["input_ids"])
    request = GenerationRequest("s", ids, 0, 6)
    greedy = SamplingConfig(temperature=0, max_new_tokens=6)
    for backend in (
        HFBackend(forced, end_token_ids(model, tokenizer)),
        SequentialBackend(forced, end_token_ids(model, tokenizer)),
    ):
        [generation] = backend.generate([request], greedy)
        assert generation.token_ids == (token,) and generation.finished
    # with the tokenizer's eos alone (the old behaviour) it runs on to the token limit
    [runaway] = HFBackend(forced, [tokenizer.eos_token_id]).generate([request], greedy)
    assert len(runaway.token_ids) == 6 and not runaway.finished


def test_the_engine_closes_a_turn_on_the_second_end_token(suite, qwen):
    model, tokenizer = qwen
    token = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    forced = _forcing(model, token)
    backend = HFBackend(forced, end_token_ids(model, tokenizer), tokenizer.pad_token_id)
    config = RolloutConfig(sampling=SamplingConfig(temperature=0, max_new_tokens=8))
    [trajectory] = RolloutEngine(backend, tokenizer, suite, config, PolicyInfo("tiny")).run(
        suite.select(["multi_turn_base_0"])
    )
    steps = [step for turn in trajectory.turns for step in turn.steps]
    assert steps and all(s.finished and s.num_tokens == 1 and s.text == "" for s in steps)
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    sampled = [i for i, m in enumerate(trajectory.token_mask) if m]
    for position in sampled[:-1]:  # the model's end token stands where the template's end-of-turn would
        assert trajectory.token_ids[position] == token and trajectory.token_ids[position + 1] != im_end


# ----- sampling -----


@pytest.fixture(scope="module")
def sharp(qwen):
    """The tiny model with its logits scaled up (final norm x8): a peaked next-token distribution, so that a wrong
    temperature or filter changes it visibly (the random model's own is nearly uniform over 4k tokens)."""
    model, tokenizer = qwen
    sharp = copy.deepcopy(model)
    with torch.no_grad():
        sharp.model.norm.weight.mul_(8.0)
    return sharp.eval(), tokenizer


def _generate_distribution(model, ids: list[int], sampling: SamplingConfig) -> torch.Tensor:
    """The first-token distribution `model.generate` samples from (softmax of its processed scores)."""
    x = torch.tensor([ids])
    with torch.no_grad():
        out = model.generate(
            x, attention_mask=torch.ones_like(x), max_new_tokens=1, pad_token_id=0, output_scores=True,
            return_dict_in_generate=True, **generate_kwargs(sampling),
        )  # fmt: skip
    return out.scores[0][0].float().softmax(-1)


def _batched_draws(model, ids: list[int], sampling: SamplingConfig, seed: int) -> tuple[list[int], list[float]]:
    """`DRAWS` first tokens from the batched backend (one request per session, all in one call)."""
    backend = HFBackend(model, [10**9], seed=seed)  # no end token: every draw counts
    requests = [GenerationRequest(f"s{i}", tuple(ids), len(ids) - 1, 1) for i in range(DRAWS)]
    generations = backend.generate(requests, sampling)
    return [g.token_ids[0] for g in generations], [g.logprobs[0] for g in generations]


def _counts(tokens: list[int], vocab: int) -> torch.Tensor:
    return torch.bincount(torch.tensor(tokens), minlength=vocab).double()


def _bins(expected: torch.Tensor) -> list[torch.Tensor]:
    """Token groups for a chi-square test: tokens expected >= 5 times alone, the rest pooled."""
    big = expected >= 5
    return [i.view(1) for i in big.nonzero().flatten()] + [(~big).nonzero().flatten()]


def goodness_of_fit(tokens: list[int], probs: torch.Tensor) -> float:
    """p-value of the draws coming from `probs` (chi-square; 0.0 if a token of probability 0 was drawn)."""
    observed = _counts(tokens, probs.numel())
    if observed[probs == 0].sum() > 0:
        return 0.0
    expected = probs.double() * len(tokens)
    bins = [b for b in _bins(expected) if b.numel()]
    obs = [float(observed[b].sum()) for b in bins]
    exp = [float(expected[b].sum()) for b in bins]
    if exp[-1] < 5:  # the pooled tail is too small to test alone: it joins the smallest bin
        obs[-2] += obs.pop()
        exp[-2] += exp.pop()
    exp = [e * sum(obs) / sum(exp) for e in exp]  # float rounding: totals must agree exactly
    return float(stats.chisquare(obs, exp).pvalue)


def test_warpers_are_the_ones_generate_applies(sharp):
    """Exact: on every step of a sampled sequence, our processor list turns generate's raw logits into its scores."""
    model, tokenizer = sharp
    ids = tokenizer(PROMPT, add_special_tokens=False)["input_ids"]
    x = torch.tensor([ids])
    settings = [
        SETTINGS,
        SamplingConfig(temperature=1.3),
        SamplingConfig(temperature=1.0, top_p=0.5),
        SamplingConfig(temperature=0.5, top_k=5),
    ]
    for sampling in settings:
        torch.manual_seed(0)
        with torch.no_grad():
            out = model.generate(
                x, attention_mask=torch.ones_like(x), max_new_tokens=5, pad_token_id=0, output_scores=True,
                output_logits=True, return_dict_in_generate=True, **generate_kwargs(sampling),
            )  # fmt: skip
        processors = logits_processors(sampling)
        for step, (raw, scores) in enumerate(zip(out.logits, out.scores, strict=True)):
            ours = processors(out.sequences[:, : len(ids) + step], raw.float())
            assert torch.equal(torch.isinf(ours), torch.isinf(scores)), sampling
            kept = ~torch.isinf(scores)
            assert torch.allclose(ours[kept], scores[kept].float(), atol=1e-5), sampling


def test_batched_backend_samples_the_distribution_generate_samples(sharp):
    model, tokenizer = sharp
    ids = tokenizer(PROMPT, add_special_tokens=False)["input_ids"]
    reference = _generate_distribution(model, ids, SETTINGS)
    assert 3 <= int((reference > 0).sum()) <= SETTINGS.top_k  # the filters are active: a real test of them
    tokens, logprobs = _batched_draws(model, ids, SETTINGS, seed=0)
    assert goodness_of_fit(tokens, reference) > ALPHA
    # the log-probabilities are those of generate's processed distribution
    assert torch.allclose(torch.tensor(logprobs), reference[torch.tensor(tokens)].log(), atol=1e-4)
    # and against model.generate's own draws (two independent samples, same settings)
    torch.manual_seed(1)
    x = torch.tensor([ids] * DRAWS)
    with torch.no_grad():
        drawn = model.generate(
            x, attention_mask=torch.ones_like(x), max_new_tokens=1, pad_token_id=0, **generate_kwargs(SETTINGS)
        )[:, -1].tolist()
    ours, theirs = _counts(tokens, reference.numel()), _counts(drawn, reference.numel())
    bins = [b for b in _bins(reference.double() * DRAWS) if (ours[b].sum() + theirs[b].sum()) > 0]
    table = [[float(ours[b].sum()) for b in bins], [float(theirs[b].sum()) for b in bins]]
    assert stats.chi2_contingency(table).pvalue > ALPHA


TOP_K_ONLY = SamplingConfig(temperature=0.7, top_k=20, max_new_tokens=1)


@pytest.mark.parametrize(
    ("right", "wrong"),
    [
        # same support (the 20 top tokens) at both temperatures: the chi-square statistic alone decides
        (TOP_K_ONLY, SamplingConfig(temperature=0.8, top_k=20, max_new_tokens=1)),
        (SETTINGS, SamplingConfig(temperature=0.7, top_p=1.0, top_k=20, max_new_tokens=1)),  # top-p not applied
    ],
    ids=["temperature_0.8_for_0.7", "top_p_left_out"],
)
def test_the_same_test_rejects_a_sampler_with_wrong_settings(sharp, right, wrong):
    model, tokenizer = sharp
    ids = tokenizer(PROMPT, add_special_tokens=False)["input_ids"]
    reference = _generate_distribution(model, ids, right)
    assert goodness_of_fit(_batched_draws(model, ids, right, seed=0)[0], reference) > ALPHA
    tokens, _ = _batched_draws(model, ids, wrong, seed=0)
    if right is TOP_K_ONLY:
        assert set(tokens) <= set((reference > 0).nonzero().flatten().tolist())
    assert goodness_of_fit(tokens, reference) < ALPHA


def test_greedy_reference_ignores_the_checkpoints_sampling_defaults(qwen):
    """A checkpoint's generation_config (Qwen2.5-Instruct: repetition_penalty 1.05, top_k 20) must not change what
    the reference backend generates: it takes only the SamplingConfig's settings, as the batched backend does."""
    model, tokenizer = qwen
    ids = tuple(tokenizer(PROMPT, add_special_tokens=False)["input_ids"])
    greedy = SamplingConfig(temperature=0, max_new_tokens=12)
    request = GenerationRequest("s", ids, 0, 12)
    [batched] = HFBackend(model, [10**9]).generate([request], greedy)
    penalised = copy.deepcopy(model)
    penalised.generation_config.repetition_penalty = 50.0
    penalised.generation_config.top_k = 20
    [reference] = SequentialBackend(penalised, [10**9]).generate([request], greedy)
    assert reference.token_ids == batched.token_ids


def test_sampling_config_checks_top_k():
    with pytest.raises(ValueError, match="top_k must be >= 0"):
        SamplingConfig(top_k=-1)
    assert len(logits_processors(SamplingConfig())) == 0  # neutral settings: plain softmax, as generate
    assert len(logits_processors(SamplingConfig(temperature=0, top_k=5))) == 0  # greedy: no warper


# ----- tool-call style -----


def _with_template(tokenizer, template: str):
    clone = copy.deepcopy(tokenizer)
    clone.chat_template = template
    return clone


def test_styles_are_inferred_from_the_shipped_and_bundled_templates(qwen, llama):
    _, qwen_tok = qwen
    _, llama_tok = llama
    assert infer_parser_style(qwen_tok).style == "hermes"  # TRL's qwen2_5, as seal_hub installs it
    assert infer_parser_style(qwen_tok).source == "trl response schema"
    assert infer_parser_style(llama_tok).style == "llama3"  # TRL's llama3_1
    assert infer_parser_style(_with_template(llama_tok, trl_chat_template("llama3_2"))).style == "llama3"
    # rendering alone agrees with TRL's response schema on the templates TRL knows
    assert style_from_rendering(qwen_tok).style == "hermes"
    assert style_from_rendering(llama_tok).style == "llama3"
    # a template TRL does not know: read from its rendering
    pythonic = _with_template(qwen_tok, PYTHONIC_TEMPLATE)
    assert infer_parser_style(pythonic) == style_from_rendering(pythonic)
    assert infer_parser_style(pythonic).style == "pythonic"


def test_a_style_the_template_contradicts_is_refused_naming_the_inferred_one(qwen, llama):
    _, qwen_tok = qwen
    _, llama_tok = llama
    assert resolve_parser_style(qwen_tok, None) == "hermes"
    assert resolve_parser_style(qwen_tok, "hermes") == "hermes"
    for tokenizer, wrong, right in ((qwen_tok, "llama3", "hermes"), (llama_tok, "hermes", "llama3")):
        with pytest.raises(ParserStyleError) as error:
            resolve_parser_style(tokenizer, wrong)
        message = str(error.value)
        assert "\n" not in message and f"'{right}' style" in message and f"parser_style={wrong!r}" in message
    with pytest.raises(ParserStyleError, match="is unknown"):
        resolve_parser_style(qwen_tok, "xml")


def test_templates_without_a_usable_call_format(qwen, llama):
    _, qwen_tok = qwen
    _, llama_tok = llama
    silent = _with_template(llama_tok, trl_chat_template("llama3"))  # Llama 3.0's: drops tool calls
    assert resolve_parser_style(silent, "pythonic") == "pythonic"  # nothing to contradict: the caller's choice
    with pytest.raises(ParserStyleError, match="cannot infer the tool-call style.*set parser_style"):
        resolve_parser_style(silent, None)
    xml = _with_template(qwen_tok, trl_chat_template("qwen3_5_nothink"))  # calls as <function=...> XML
    for requested in (None, "hermes"):
        with pytest.raises(ParserStyleError, match="cannot parse"):
            resolve_parser_style(xml, requested)


def test_the_engine_parses_in_the_inferred_style_and_refuses_a_contradiction(suite, qwen, llama):
    _, qwen_tok = qwen
    _, llama_tok = llama
    task = suite.select(["multi_turn_base_0"])
    first = suite.task("multi_turn_base_0").ground_truth[0][0]
    call = ToolCall(first.name, first.arguments)
    script = lambda session, step, request: format_tool_calls([call], "llama3") if step == 0 else "Done."  # noqa: E731
    engine = RolloutEngine(ScriptedBackend(llama_tok, script), llama_tok, suite, RolloutConfig(), PolicyInfo("t"))
    assert engine.parser.style == "llama3" and engine.renderer.end_of_turn == "<|eot_id|>"
    [trajectory] = engine.run(task)
    assert [c.name for c in trajectory.turns[0].steps[0].tool_calls] == [call.name]
    with pytest.raises(ParserStyleError, match="'hermes' style"):
        RolloutEngine(ScriptedBackend(qwen_tok, script), qwen_tok, suite, RolloutConfig(parser_style="pythonic"))
    with pytest.raises(ValueError, match="parser_style must be one of"):
        RolloutConfig(parser_style="xml")


def test_library_configs_default_to_the_inferred_style(tmp_path):
    from seal_hub.evaluation import EvalProtocol
    from seal_hub.training import SealConfig
    from seal_hub.training.held_out import held_out_protocol

    assert RolloutConfig().parser_style is None
    assert EvalProtocol().parser_style is None and EvalProtocol().rollout_config().parser_style is None
    base = {"output_dir": str(tmp_path), "use_cpu": True, "num_generations": 2}
    assert SealConfig(**base).parser_style is None and held_out_protocol(SealConfig(**base)).parser_style is None
    with pytest.raises(ValueError, match="parser_style='xml'"):
        SealConfig(**base, parser_style="xml")
    with pytest.raises(ValueError, match="repetition_penalty are not applied"):
        SealConfig(**base, repetition_penalty=1.1)


def test_two_calls_in_one_step_under_a_one_call_template(suite, llama):
    """Llama-3.1's template refuses an assistant message with two calls; the episode goes on: both calls run, the
    step's text is shown to the template as the model wrote it, and the trajectory records both calls."""
    _, llama_tok = llama
    task = suite.select(["multi_turn_base_0"])
    calls = [ToolCall(c.name, c.arguments) for c in suite.task("multi_turn_base_0").ground_truth[0][:2]]
    assert len(calls) == 2
    two = format_tool_calls(calls, "llama3")
    script = lambda session, step, request: two if step == 0 else "Done."  # noqa: E731
    engine = RolloutEngine(ScriptedBackend(llama_tok, script), llama_tok, suite, RolloutConfig(), PolicyInfo("t"))
    [trajectory] = engine.run(task)
    first = trajectory.turns[0].steps[0]
    assert [c.name for c in first.tool_calls] == [c.name for c in calls]
    assert len(first.results) == 2 and all(r.executed for r in first.results)
    assert len(trajectory.turns[0].steps) == 2  # the model was asked again after the two results
