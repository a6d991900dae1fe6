"""Which tool-call style a chat template teaches, and refusing a parser style that contradicts it.

A policy writes tool calls the way its chat template renders them in past assistant turns (and, for most
templates, describes them in the system prompt): Qwen2.5's ChatML template writes hermes blocks
(``<tool_call>{"name": ..., "arguments": ...}</tool_call>``), Llama-3.1's writes bare JSON objects with
``"parameters"`` (the llama3 style). Parsing with another style turns every call into a parse error, so the
style is inferred from the template when not given (``parser_style=None``), and a given style that the
template contradicts is refused with a one-line `ParserStyleError` naming the inferred style.

How the style is inferred, first rule that applies:

1. TRL's response schema. `trl.chat_template_utils.add_response_schema` knows, by exact template text, how
   the templates TRL bundles write responses (the parser `GRPOTrainer` uses with tools), and sets a response
   template for it. It is applied to a stand-in object (the tokenizer is never changed), and each of
   seal_hub's styles writes a probe call that transformers' ``parse_response`` then reads with that response
   template: the style whose call it reads back is the template's. TRL's helper only *parses*; it has no
   notion of seal_hub's style names, which is why the styles are tried against it rather than mapped.
2. Rendering. For a template TRL does not recognise (an exact-match list: a model's own variant of a known
   template, or ToolACE-style pythonic templates), the template renders an assistant turn holding the probe
   call, and each of seal_hub's parsers (`seal_hub.models.toolcalls`) reads the assistant part: the style whose
   parser gets the call back is the template's.

A template that does not render tool calls at all (it drops them) teaches no style: a given style is then
accepted as the caller's choice, and ``None`` is refused with a message that asks for one. A template that
renders calls in a format none of the styles parses (e.g. Qwen3.5's XML-like calls) refuses every style.

Not covered: templates that describe one format in their system prompt and render another in past turns
(the rendered turns decide), and per-model prompting styles outside the chat template.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from seal_hub.envs.protocol import ToolCall
from seal_hub.models.end_tokens import template_end_of_turn
from seal_hub.models.toolcalls import (
    PARSER_STYLES,
    ParserStyleError,
    check_parser_style,
    format_tool_calls,
    parse_tool_calls,
)

PROBE_CALL = ToolCall(name="seal_style_probe", arguments={"city": "Paris", "days": 3})
PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": PROBE_CALL.name,
        "description": "Probe tool used to read the chat template's tool-call format.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city", "days"],
        },
    },
}
_PROBE_USER = "seal_style_probe_question"


@dataclass(frozen=True)
class StyleInference:
    """What the chat template says about tool calls."""

    style: str | None  # the matching seal_hub style, None if none matches
    renders_calls: bool  # the template shows how calls are written (so a different style is a contradiction)
    source: str  # "trl response schema", "template rendering" or "none"
    detail: str = ""  # why no style was found (for messages)


def _is_probe(calls: Any) -> bool:
    return (
        isinstance(calls, list | tuple)
        and len(calls) == 1
        and calls[0].name == PROBE_CALL.name
        and calls[0].arguments == PROBE_CALL.arguments
    )


def trl_response_template(chat_template: str) -> dict | None:
    """The response template TRL sets for `chat_template` (None: TRL does not recognise it)."""
    from trl.chat_template_utils import add_response_schema

    probe = SimpleNamespace(chat_template=chat_template)  # stands in for a tokenizer; the real one is not changed
    try:
        add_response_schema(probe)
    except ValueError:
        return None
    return getattr(probe, "response_template", None) or getattr(probe, "response_schema", None)


def _style_from_trl(tokenizer, schema: dict, end_of_turn: str | None) -> str | None:
    """The style whose probe call transformers' parser reads back with TRL's response template."""
    for style in PARSER_STYLES:
        text = format_tool_calls([PROBE_CALL], style) + (end_of_turn or "")
        try:
            parsed = tokenizer.parse_response(text, schema=schema, prefix="")
            calls = [
                ToolCall(name=c["function"]["name"], arguments=c["function"]["arguments"])
                for c in parsed.get("tool_calls") or []
            ]
        except Exception:  # noqa: BLE001 - a style the response template cannot read is simply not a match
            continue
        if _is_probe(calls):
            return style
    return None


def _assistant_reply(tokenizer, end_of_turn: str | None) -> str | None:
    """The text the template renders for an assistant turn that makes the probe call (None: it cannot)."""
    call = {"type": "function", "function": {"name": PROBE_CALL.name, "arguments": dict(PROBE_CALL.arguments)}}
    user = {"role": "user", "content": _PROBE_USER}
    assistant = {"role": "assistant", "content": "", "tool_calls": [call]}
    try:
        prompt = tokenizer.apply_chat_template([user], tools=[PROBE_TOOL], add_generation_prompt=True, tokenize=False)
        full = tokenizer.apply_chat_template([user, assistant], tools=[PROBE_TOOL], tokenize=False)
    except Exception:  # noqa: BLE001 - a template that fails on a tool call renders none
        return None
    if not (isinstance(prompt, str) and isinstance(full, str) and full.startswith(prompt)):
        return None
    reply = full[len(prompt) :]
    if end_of_turn and end_of_turn in reply:
        reply = reply[: reply.index(end_of_turn)]
    return reply


def style_from_rendering(tokenizer) -> StyleInference:
    """Rule 2 alone: the style whose parser reads back the probe call the template renders."""
    reply = _assistant_reply(tokenizer, template_end_of_turn(tokenizer))
    if reply is None:
        return StyleInference(None, False, "none", "the chat template cannot render an assistant tool call")
    if PROBE_CALL.name not in reply:
        return StyleInference(None, False, "none", "the chat template does not render tool calls")
    for style in PARSER_STYLES:
        action = parse_tool_calls(reply, style)
        if not action.parse_errors and _is_probe(action.tool_calls):
            return StyleInference(style, True, "template rendering")
    clipped = " ".join(reply.split())[:80]
    return StyleInference(None, True, "template rendering", f"it renders a tool call as {clipped!r}")


def infer_parser_style(tokenizer) -> StyleInference:
    """The tool-call style `tokenizer`'s chat template teaches (TRL's response schema first, then rendering)."""
    template = getattr(tokenizer, "chat_template", None)
    if not isinstance(template, str):
        return StyleInference(None, False, "none", "the tokenizer has no chat template")
    schema = trl_response_template(template)
    if schema is not None:
        style = _style_from_trl(tokenizer, schema, template_end_of_turn(tokenizer))
        detail = "" if style else "TRL's response schema for it reads none of hermes, llama3, pythonic"
        return StyleInference(style, True, "trl response schema", detail)
    return style_from_rendering(tokenizer)


def resolve_parser_style(tokenizer, requested: str | None) -> str:
    """The parser style to use: `requested` if the template agrees (or teaches none), else the inferred one for
    None; a contradiction or an impossible inference raises `ParserStyleError` (one line)."""
    check_parser_style(requested)
    choices = ", ".join(PARSER_STYLES)
    inference = infer_parser_style(tokenizer)
    if inference.style is not None:
        if requested is not None and requested != inference.style:
            raise ParserStyleError(
                f"parser_style={requested!r} does not match the chat template, which writes tool calls in the "
                f"{inference.style!r} style; use parser_style={inference.style!r} or leave it unset to infer it"
            )
        return inference.style
    if inference.renders_calls:
        raise ParserStyleError(
            f"the chat template writes tool calls in a format seal_hub cannot parse ({inference.detail}); "
            f"use a template that writes one of {choices}"
        )
    if requested is None:
        raise ParserStyleError(
            f"cannot infer the tool-call style: {inference.detail}; set parser_style to one of {choices}"
        )
    return requested
