"""Tests for `seal_hub.models.toolcalls`: exact parses per style, one error kind per malformed call, round trips, and
property tests that the parser returns an `Action` on any text (random, truncated, deeply nested, huge)."""

from __future__ import annotations

import json
import keyword
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seal_hub.envs.protocol import Action, ParseError, ToolCall
from seal_hub.models.toolcalls import (
    PARSE_ERROR_KINDS,
    PARSER_STYLES,
    ToolCallParser,
    format_tool_call,
    format_tool_calls,
    parse_tool_calls,
)

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def checked(action: Action) -> Action:
    """Assert the invariants every parse result keeps, and return it."""
    assert isinstance(action, Action)
    assert isinstance(action.content, str)
    assert action.content == action.content.strip()
    for index, call in enumerate(action.tool_calls):
        assert isinstance(call, ToolCall)
        assert isinstance(call.name, str) and call.name.strip()
        assert call.id == f"call_{index}"
    for error in action.parse_errors:
        assert isinstance(error, ParseError)
        assert error.kind in PARSE_ERROR_KINDS and error.kind != "internal_error", error
    return action


def calls(action: Action) -> list[tuple[str, Any]]:
    return [(call.name, call.arguments) for call in action.tool_calls]


def kinds(action: Action) -> list[str]:
    return [error.kind for error in action.parse_errors]


# ---------------------------------------------------------------------------------------------------- hermes


def test_hermes_several_calls_with_text_around() -> None:
    text = (
        "Let me look that up.\n"
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>\n'
        '<tool_call>{"name": "convert", "arguments": {"value": 1.5, "opts": {"round": true, "to": ["C", "F"]}}}'
        "</tool_call>\nOne moment."
    )
    action = checked(parse_tool_calls(text))
    assert action.content == "Let me look that up.\nOne moment."
    assert calls(action) == [
        ("get_weather", {"city": "Paris", "days": 3}),
        ("convert", {"value": 1.5, "opts": {"round": True, "to": ["C", "F"]}}),
    ]
    assert [call.id for call in action.tool_calls] == ["call_0", "call_1"]
    assert action.parse_errors == ()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('{"name": "f", "arguments": "{\\"a\\": [1, 2]}"}', {"a": [1, 2]}),  # arguments as a JSON string
        ('{"name": "f", "parameters": {"a": 1}}', {"a": 1}),  # synonym
        ('{"name": "f"}', {}),  # missing arguments
        ('{"name": "f", "arguments": "  "}', {}),  # blank string
        ('{"name": "f", "arguments": [1, 2]}', [1, 2]),  # not an object: kept for the environment
        ('{"name": "f", "arguments": 7}', 7),
        ('{"name": "f", "arguments": "\\"x\\""}', "x"),
        ('{"name": "f", "arguments": {"t": "</tool_call> <tool_call>"}}', {"t": "</tool_call> <tool_call>"}),
        ('{"name": "météo_東京", "arguments": {"ville": "Zürich 🌧", "note": "日本語"}}', None),
    ],
)
def test_hermes_argument_forms(body: str, expected: Any) -> None:
    action = checked(parse_tool_calls(f"<tool_call>{body}</tool_call>"))
    assert action.parse_errors == ()
    assert len(action.tool_calls) == 1
    if expected is None:
        assert calls(action) == [("météo_東京", {"ville": "Zürich 🌧", "note": "日本語"})]
    else:
        assert action.tool_calls[0].arguments == expected


@pytest.mark.parametrize(
    ("bad", "kind"),
    [
        ('<tool_call>{"name": "bad", "arguments": {</tool_call>', "invalid_json"),
        ("<tool_call></tool_call>", "invalid_json"),
        ('<tool_call>{"name": "bad"} trailing</tool_call>', "invalid_json"),
        ('<tool_call>["bad"]</tool_call>', "not_an_object"),
        ('<tool_call>"bad"</tool_call>', "not_an_object"),
        ('<tool_call>{"arguments": {"a": 1}}</tool_call>', "missing_name"),
        ('<tool_call>{"name": "", "arguments": {}}</tool_call>', "missing_name"),
        ('<tool_call>{"name": 3}</tool_call>', "missing_name"),
        ('<tool_call>{"name": "bad", "arguments": "{oops"}</tool_call>', "bad_arguments"),
        ("<tool_call>" + "[" * 5000 + "]" * 5000 + "</tool_call>", "too_deep"),
    ],
)
def test_hermes_malformed_call_keeps_the_others(bad: str, kind: str) -> None:
    good = format_tool_call(ToolCall("ok", {"x": 1}))
    action = checked(parse_tool_calls(f"before {good} {bad} {good} after"))
    assert kinds(action) == [kind]
    assert calls(action) == [("ok", {"x": 1}), ("ok", {"x": 1})]
    assert action.content == "before\nafter"
    assert action.parse_errors[0].text in (bad, bad[:2_000] + "...")  # the span, clipped when long


def test_hermes_unclosed_tag() -> None:
    # Complete JSON after an unclosed tag is accepted (as vLLM does); incomplete JSON is an unclosed_tag error.
    assert calls(checked(parse_tool_calls('<tool_call>{"name": "f", "arguments": {"a": 1}}'))) == [("f", {"a": 1})]
    assert calls(checked(parse_tool_calls('<tool_call>{"name": "f"}\n</tool_'))) == [("f", {})]
    action = checked(parse_tool_calls('<tool_call>{"name": "f"}<tool_call>{"name": "g"}</tool_call>'))
    assert calls(action) == [("f", {}), ("g", {})]
    action = checked(parse_tool_calls('Hi <tool_call>{"name": "f", "argu<tool_call>{"name": "g"}</tool_call>'))
    assert calls(action) == [("g", {})]
    assert kinds(action) == ["unclosed_tag"]
    assert action.parse_errors[0].text == '<tool_call>{"name": "f", "argu'
    assert action.content == "Hi"
    action = checked(parse_tool_calls('<tool_call>{"name": "f"} and then text'))
    assert (calls(action), kinds(action)) == ([], ["unclosed_tag"])


def test_plain_message_has_no_calls() -> None:
    for style in PARSER_STYLES:
        action = checked(parse_tool_calls("  The capital of France is Paris.  ", style))
        assert action == Action(content="The capital of France is Paris.")


# ---------------------------------------------------------------------------------------------------- llama3


@pytest.mark.parametrize(
    "text",
    [
        '<|python_tag|>{"name": "f", "parameters": {"a": 1}}; {"name": "g", "parameters": {"b": "x;y"}}<|eom_id|>',
        '{"name": "f", "parameters": {"a": 1}}\n{"name": "g", "arguments": {"b": "x;y"}}',
        '[{"name": "f", "parameters": {"a": 1}}, {"name": "g", "parameters": {"b": "x;y"}}]<|eot_id|>',
        '  {"name": "f", "parameters": "{\\"a\\": 1}"}, {"name": "g", "parameters": {"b": "x;y"}}',
    ],
)
def test_llama3_calls(text: str) -> None:
    action = checked(parse_tool_calls(text, "llama3"))
    assert calls(action) == [("f", {"a": 1}), ("g", {"b": "x;y"})]
    assert action.parse_errors == ()
    assert action.content == ""


def test_llama3_text_before_tag_and_after_calls_is_content() -> None:
    text = 'Checking now. <|python_tag|>{"name": "f", "parameters": {}}\nI asked for the forecast.'
    action = checked(parse_tool_calls(text, "llama3"))
    assert calls(action) == [("f", {})]
    assert action.content == "Checking now.\nI asked for the forecast."


def test_llama3_malformed_calls_keep_the_others() -> None:
    text = (
        '{"name": "f", "parameters": {"a": 1}\n'  # missing brace: resumes at the next line
        '{"name": "g", "parameters": {}}; [{"name": "h"}, 5, {"parameters": {}}]; {"name": "i", "parameters": "{x"}'
    )
    action = checked(parse_tool_calls(text, "llama3"))
    assert calls(action) == [("g", {}), ("h", {})]
    assert kinds(action) == ["invalid_json", "not_an_object", "missing_name", "bad_arguments"]
    assert kinds(checked(parse_tool_calls("<|python_tag|>just text", "llama3"))) == ["invalid_json"]


# ---------------------------------------------------------------------------------------------------- pythonic


@pytest.mark.parametrize(
    "text",
    [
        "[get_weather(city='Paris', days=3), math.sqrt(x=[1, -2.5, {'k': None}], exact=True)]",
        "get_weather(city='Paris', days=3), math.sqrt(x=[1, -2.5, {'k': None}], exact=True)",
        "get_weather(city='Paris', days=3)\nmath.sqrt(x=(1, -2.5, {'k': None}), exact=True)",
        "```python\n[get_weather(city=\"Paris\", days=3),\n math.sqrt(x=[1, -2.5, {'k': None}], exact=True)]\n```",
    ],
)
def test_pythonic_calls(text: str) -> None:
    action = checked(parse_tool_calls(text, "pythonic"))
    assert calls(action) == [
        ("get_weather", {"city": "Paris", "days": 3}),
        ("math.sqrt", {"x": [1, -2.5, {"k": None}], "exact": True}),
    ]
    assert action.parse_errors == () and action.content == ""


def test_pythonic_unicode_and_empty_list() -> None:
    action = checked(parse_tool_calls("[traduire(texte='héllo 世界 🌍', langue='日本語')]", "pythonic"))
    assert calls(action) == [("traduire", {"texte": "héllo 世界 🌍", "langue": "日本語"})]
    assert checked(parse_tool_calls("[]", "pythonic")) == Action()


@pytest.mark.parametrize(
    ("bad", "kind"),
    [
        ("f(1, y=2)", "positional_argument"),
        ("f(x=g(y=1))", "nested_call"),
        ("f(x=[1, g()])", "nested_call"),
        ("f(x=y)", "bad_arguments"),
        ("f(x={1, 2})", "bad_arguments"),
        ("f(x=b'raw')", "bad_arguments"),
        ("f(x={1: 2})", "bad_arguments"),
        ("f(x=1 + 2)", "bad_arguments"),
        ("f(**kw)", "bad_arguments"),
        ("f(x=1, x=2)", "bad_arguments"),
        ("42", "not_a_call"),
        ("g()(x=1)", "missing_name"),
    ],
)
def test_pythonic_malformed_call_keeps_the_others(bad: str, kind: str) -> None:
    action = checked(parse_tool_calls(f"[ok(a=1), {bad}, ok(b='2')]", "pythonic"))
    assert kinds(action) == [kind]
    assert calls(action) == [("ok", {"a": 1}), ("ok", {"b": "2"})]


@pytest.mark.parametrize(
    "text", ["[f(x=1), g(y=", "[f(x=1)]\nThat is all.", "f(x=1) g(y=2)", "f(x='\0')\0", "f(x='\ud800')"]
)
def test_pythonic_syntax_error_fails_the_list(text: str) -> None:
    action = checked(parse_tool_calls(text, "pythonic"))
    assert (calls(action), kinds(action)) == ([], ["syntax_error"])


def test_pythonic_never_evaluates() -> None:
    action = checked(parse_tool_calls("[f(x=__import__('os').system('exit 1'))]", "pythonic"))
    assert kinds(action) == ["nested_call"]
    action = checked(parse_tool_calls("f(x=(lambda: 1)())", "pythonic"))
    assert kinds(action) == ["nested_call"]


# ---------------------------------------------------------------------------------------------------- bounds

DEEP = 100_000


@pytest.mark.parametrize(
    ("style", "text", "kind", "kept"),
    [
        ("hermes", "<tool_call>" + "[" * DEEP + '</tool_call><tool_call>{"name": "ok"}</tool_call>', "too_deep", 1),
        ("hermes", '<tool_call>{"name": "f", "arguments": ' + '{"a": ' * DEEP, "unclosed_tag", 0),
        ("hermes", '<tool_call>{"name": "f", "arguments": "' + "[" * DEEP + '"}</tool_call>', "too_deep", 0),
        ("llama3", '{"name": "ok"}\n' + '{"a": ' * DEEP + "1" + "}" * DEEP, "too_deep", 1),
        ("llama3", '[{"name": "f", "parameters": ' + "[" * DEEP, "too_deep", 0),
        ("llama3", "[" * DEEP, "", 0),  # not a call at all: plain content
        ("pythonic", "f(x=" + "[" * DEEP + "]" * DEEP + ")", "syntax_error", 0),
        ("pythonic", "f(x=" + "-" * DEEP + "1)", "too_deep", 0),
        ("pythonic", "f(x=" + "1+" * DEEP + "1)", "too_deep", 0),
    ],
)
def test_deep_nesting_is_reported(style: str, text: str, kind: str, kept: int) -> None:
    action = checked(parse_tool_calls(text, style, max_chars=1_000_000))
    assert kinds(action) == ([kind] if kind else [])
    assert calls(action) == [("ok", {})] * kept
    assert all(len(error.text) <= 2_003 for error in action.parse_errors)  # a clipped span, not 100k characters


def test_too_long_text_is_not_parsed() -> None:
    text = format_tool_call(ToolCall("f")) + " " * 200_000
    action = checked(parse_tool_calls(text))
    assert (calls(action), kinds(action)) == ([], ["too_long"])
    assert calls(checked(parse_tool_calls(text, max_chars=300_000))) == [("f", {})]


@pytest.mark.parametrize("style", PARSER_STYLES)
def test_thousands_of_calls(style: str) -> None:
    many = [ToolCall(f"tool_{i}", {"i": i}) for i in range(2_500)]
    text = format_tool_calls(many, style)
    assert len(text) < 200_000
    action = checked(parse_tool_calls(text, style))
    assert calls(action) == [(f"tool_{i}", {"i": i}) for i in range(256)]
    assert kinds(action) == ["too_many_calls"]
    action = checked(ToolCallParser(style, max_calls=5_000).parse(text))
    assert calls(action) == [(c.name, c.arguments) for c in many] and action.parse_errors == ()


def test_call_limit_counts_malformed_calls() -> None:
    text = "<tool_call>{bad}</tool_call>" * 3 + format_tool_call(ToolCall("f"))
    action = checked(parse_tool_calls(text, max_calls=3))
    assert (calls(action), kinds(action)) == ([], ["invalid_json"] * 3 + ["too_many_calls"])


def test_caller_errors_fail_fast() -> None:
    with pytest.raises(ValueError, match="style"):
        parse_tool_calls("x", "xml")
    with pytest.raises(ValueError, match="max_calls"):
        ToolCallParser(max_calls=0)
    with pytest.raises(ValueError, match="Python"):
        format_tool_call(ToolCall("get-weather"), "pythonic")
    with pytest.raises(ValueError, match="identifier"):
        format_tool_call(ToolCall("f", {"class": 1}), "pythonic")
    with pytest.raises(ValueError, match="dict arguments"):
        format_tool_call(ToolCall("f", [1]), "pythonic")


def test_format_matches_the_chat_templates() -> None:
    call = ToolCall("get_weather", {"city": "Zürich"})
    assert (
        format_tool_call(call) == '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich"}}\n</tool_call>'
    )
    assert format_tool_call(call, "llama3") == '{"name": "get_weather", "parameters": {"city": "Zürich"}}'
    assert format_tool_call(call, "pythonic") == "[get_weather(city='Zürich')]"
    assert ToolCallParser("pythonic").format(call) == "[get_weather(city='Zürich')]"


# ---------------------------------------------------------------------------------------------------- properties

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True)
PY_NAMES = NAMES.filter(lambda name: not keyword.iskeyword(name))
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


def tool_calls(style: str) -> st.SearchStrategy[list[ToolCall]]:
    keys = PY_NAMES if style == "pythonic" else st.text(max_size=10)
    name = PY_NAMES if style == "pythonic" else NAMES
    call = st.builds(ToolCall, name=name, arguments=st.dictionaries(keys, VALUES, max_size=5))
    return st.lists(call, min_size=1, max_size=5)


@pytest.mark.parametrize("style", PARSER_STYLES)
@FAST
@given(data=st.data())
def test_round_trip(style: str, data: st.DataObject) -> None:
    original = data.draw(tool_calls(style))
    action = checked(parse_tool_calls(format_tool_calls(original, style), style))
    assert calls(action) == [(c.name, c.arguments) for c in original]
    assert action.parse_errors == () and action.content == ""
    assert all(format_tool_call(c, style) for c in original)  # single-call form renders too


@FAST
@given(original=tool_calls("hermes"), before=st.text(max_size=30), after=st.text(max_size=30))
def test_hermes_round_trip_with_text_around(original: list[ToolCall], before: str, after: str) -> None:
    before, after = before.replace("<tool_call>", ""), after.replace("<tool_call>", "")
    action = checked(parse_tool_calls(f"{before}\n{format_tool_calls(original)}\n{after}"))
    assert calls(action) == [(c.name, c.arguments) for c in original]
    assert action.content == "\n".join(part.strip() for part in (before, after) if part.strip())


FRAGMENTS = [
    "<tool_call>", "</tool_call>", "<tool_", "<|python_tag|>", "<|eot_id|>", "{", "}", "[", "]", "(", ")", '"',
    "'", '"name"', '"arguments"', '"parameters"', ":", ",", ";", "\n", " ", '"f"', "f(", "x=", "1", "-", "**",
    "```", "\\", "null", "true", "[{", "\ud800", "\0",
]  # fmt: skip
NOISE = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=6), max_size=40).map("".join)


@pytest.mark.parametrize("style", PARSER_STYLES)
@settings(max_examples=150, deadline=None)
@given(text=NOISE | st.text(max_size=200) | st.binary(max_size=200).map(lambda b: b.decode("utf-8", "replace")))
def test_never_raises_on_any_text(style: str, text: str) -> None:
    checked(parse_tool_calls(text, style))
    checked(parse_tool_calls(text, style, max_calls=1, max_chars=50))


SAMPLES = {
    "hermes": [ToolCall("get_weather", {"city": "Zürich", "days": [1, 2]}), ToolCall("note", {"t": "a}b"})],
    "llama3": [ToolCall("get_weather", {"city": "Zürich", "days": [1, 2]}), ToolCall("note", {"t": "a}b"})],
    "pythonic": [ToolCall("get_weather", {"city": "Zürich", "days": [1, 2]}), ToolCall("note", {"t": "a)b"})],
}


@pytest.mark.parametrize("style", PARSER_STYLES)
def test_truncation_at_every_position_yields_a_prefix_of_the_calls(style: str) -> None:
    expected = [(c.name, c.arguments) for c in SAMPLES[style]]
    text = format_tool_calls(SAMPLES[style], style)
    if style == "hermes":
        text = f"Sure, checking.\n{text}\nDone."
    for cut in range(len(text) + 1):
        action = checked(parse_tool_calls(text[:cut], style))
        got = calls(action)
        assert got == expected[: len(got)], (cut, text[:cut])
    assert calls(parse_tool_calls(text, style)) == expected


@pytest.mark.parametrize("style", PARSER_STYLES)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_cut_and_noise_never_break_the_parser(style: str, data: st.DataObject) -> None:
    text = format_tool_calls(data.draw(tool_calls(style)), style)
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    checked(parse_tool_calls(text[:cut] + data.draw(NOISE) + text[cut:], style))


def test_json_dumps_of_parsed_calls_is_valid() -> None:
    # Calls the parser returns are JSON-able, so they can go straight into chat messages and logs.
    action = parse_tool_calls("[f(x=(1, 2), y={'a': [True, None]}, z=-0.5)]", "pythonic")
    assert json.loads(json.dumps([c.to_chat() for c in action.tool_calls])) == [
        {
            "type": "function",
            "function": {"name": "f", "arguments": {"x": [1, 2], "y": {"a": [True, None]}, "z": -0.5}},
            "id": "call_0",
        }
    ]
