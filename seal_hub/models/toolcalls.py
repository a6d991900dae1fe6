"""Turn model text into tool calls: one parser, three output styles, shared by training and evaluation.

`parse_tool_calls(text, style)` returns an `Action` (see `seal_hub.envs.protocol`): the text outside the calls
(`content`, stripped), the well-formed calls in order (`tool_calls`, ids `call_0`, `call_1`, ...) and one
`ParseError` per malformed call (`parse_errors`). The styles are ``"hermes"`` (Qwen2.5, ChatML ``<tool_call>``
blocks), ``"llama3"`` (Llama-3.1 JSON calls) and ``"pythonic"`` (BFCL's ``[f(x=1)]``); each style's rules are its
parser's docstring (`_parse_hermes`, `_parse_llama3`, `_parse_pythonic`). `format_tool_call(s)` renders calls back
in each style (SFT targets, tests) and round-trips with the parser.

Design choices: a malformed call never hides the well-formed ones around it, and the parser never raises on any
text: model mistakes become `ParseError`s with a short `kind`, which the environment feeds back as observations and
the diagnosis turns into labels. Texts and call counts are bounded (`ToolCallParser`), and nothing is ever evaluated.

Not covered: checking calls against tool schemas (the environment does that), reasoning blocks such as
``<think>`` (a call inside one is parsed like any other), Llama's built-in ``tool.call(...)`` syntax, and
streaming (partial) parsing.
"""

from __future__ import annotations

import ast
import json
import keyword
import re
from dataclasses import dataclass
from typing import Any

from seal_hub.envs.protocol import Action, ParseError, ToolCall

PARSER_STYLES = ("hermes", "llama3", "pythonic")


class ParserStyleError(ValueError):
    """A tool-call style that is unknown, cannot be inferred, or contradicts the chat template (one line)."""


def check_parser_style(style: str | None) -> None:
    """`style` is one of `PARSER_STYLES`, or None (inferred from the chat template: `seal_hub.models.parser_style`)."""
    if style is not None and style not in PARSER_STYLES:
        raise ParserStyleError(
            f"parser_style={style!r} is unknown: parser_style must be one of {', '.join(PARSER_STYLES)}, or None "
            "(inferred from the chat template)"
        )


DEFAULT_MAX_CHARS = 200_000
DEFAULT_MAX_CALLS = 256
# Every `ParseError.kind` this module produces (the diagnosis maps them to labels).
PARSE_ERROR_KINDS = (
    "invalid_json",  # the call text is not JSON (hermes, llama3)
    "unclosed_tag",  # <tool_call> never closed and not followed by one complete JSON object
    "not_an_object",  # the call is JSON but not an object
    "missing_name",  # no non-empty string name (or, pythonic, the callee is not a dotted name)
    "bad_arguments",  # an arguments string that is not JSON; pythonic: **kwargs, repeated or non-literal values
    "syntax_error",  # pythonic text that Python cannot parse
    "not_a_call",  # pythonic: a list element or statement that is not a call
    "positional_argument",  # pythonic: f(1) instead of f(x=1)
    "nested_call",  # pythonic: a call used as an argument value
    "too_deep",  # nesting beyond what the JSON decoder or the Python parser handles
    "too_many_calls",  # more than max_calls attempts; the rest ignored
    "too_long",  # the text exceeds max_chars; not parsed
    "internal_error",  # a parser bug, caught by the safety net
)
_MAX_ERROR_TEXT = 2_000  # a ParseError keeps at most this much of its span

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_PYTHON_TAG = "<|python_tag|>"
_LLAMA_END_TOKENS = ("<|eom_id|>", "<|eot_id|>")
_LLAMA_START = re.compile(r"\s*(?:\{|\[\s*\{)")
_LLAMA_RESYNC = re.compile(r"[;\n]\s*(?=[\[{])")
_LLAMA_SEPARATORS = " \t\r\n;,"
_PY_START = re.compile(r"\[?\s*[^\W\d][\w.]*\(")
_FENCE = re.compile(r"\A```[\w-]*\n(.*?)\n?```\Z", re.DOTALL)
_DOTTED_NAME = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*\Z")
_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"\s*")
_Result = ToolCall | ParseError


def _error(kind: str, message: str, text: str = "") -> ParseError:
    clipped = text if len(text) <= _MAX_ERROR_TEXT else text[:_MAX_ERROR_TEXT] + "..."
    return ParseError(kind=kind, message=message, text=clipped)


def _loads(text: str, span: str, what: str) -> Any | ParseError:
    """Decode JSON, turning every failure (including too-deep nesting) into a ParseError."""
    try:
        return json.loads(text)
    except RecursionError:
        return _error("too_deep", f"{what} is nested too deeply to decode", span)
    except ValueError as exc:  # JSONDecodeError, and integers over Python's digit limit
        return _error("invalid_json", f"{what} is not valid JSON: {exc}", span)


def _call_from_object(obj: Any, span: str) -> _Result:
    """Validate one decoded call object: a name and arguments (under "arguments" or "parameters")."""
    if not isinstance(obj, dict):
        return _error("not_an_object", f"a tool call must be a JSON object, got {type(obj).__name__}", span)
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        return _error("missing_name", 'a tool call needs a non-empty string "name"', span)
    arguments = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(arguments, str):
        if not arguments.strip():
            arguments = {}
        else:
            decoded = _loads(arguments, span, f'the "arguments" string of {name!r}')
            if isinstance(decoded, ParseError):
                kind = "too_deep" if decoded.kind == "too_deep" else "bad_arguments"
                return _error(kind, decoded.message, span)
            arguments = decoded
    return ToolCall(name=name, arguments=arguments)


class _Collector:
    """Accumulates calls, errors and content pieces for one text, enforcing the call limit."""

    def __init__(self, max_calls: int) -> None:
        self.max_calls = max_calls
        self.attempts = 0
        self.calls: list[ToolCall] = []
        self.errors: list[ParseError] = []
        self.content: list[str] = []

    def full(self, rest: str) -> bool:
        """Record `too_many_calls` (with the ignored rest) and return True once the limit is reached."""
        if self.attempts < self.max_calls:
            return False
        self.errors.append(_error("too_many_calls", f"more than {self.max_calls} tool calls; the rest ignored", rest))
        return True

    def add(self, result: _Result) -> None:
        self.attempts += 1
        if isinstance(result, ParseError):
            self.errors.append(result)
        else:
            self.calls.append(ToolCall(result.name, result.arguments, id=f"call_{len(self.calls)}"))

    def action(self) -> Action:
        content = "\n".join(piece.strip() for piece in self.content if piece.strip())
        return Action(content=content, tool_calls=tuple(self.calls), parse_errors=tuple(self.errors))


def _skip_space(text: str, pos: int) -> int:
    return _SPACE.match(text, pos).end()  # type: ignore[union-attr]  # r"\s*" always matches


def _parse_hermes(text: str, out: _Collector) -> None:
    """``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, any number, with text around.

    ``"parameters"`` is a synonym of ``"arguments"``; arguments given as a JSON string are decoded (a blank string
    means ``{}``, an undecodable one is ``bad_arguments``); a missing key means ``{}``; arguments that are JSON but
    not an object are kept as they are, for the environment to answer. As vLLM's hermes parser: a ``<tool_call>``
    never closed (the text ends, or the next ``<tool_call>`` starts) still yields its call when what follows it is
    one complete JSON object (a partial ``</tool_...`` at the very end is ignored); otherwise it is an
    ``unclosed_tag`` error. The object is decoded before the closing tag is looked for, so a ``"</tool_call>"``
    inside a JSON string does not cut the call."""
    pos, n = 0, len(text)
    while True:
        start = text.find(_OPEN, pos)
        if start < 0:
            out.content.append(text[pos:])
            return
        out.content.append(text[pos:start])
        if out.full(text[start:]):
            return
        body_start = start + len(_OPEN)
        # First try: one complete JSON object right after the tag (robust to tags inside JSON strings).
        j = _skip_space(text, body_start)
        if j < n and text[j] == "{":
            try:
                obj, obj_end = _DECODER.raw_decode(text, j)
            except (ValueError, RecursionError):
                obj_end = -1
            if obj_end >= 0:
                k = _skip_space(text, obj_end)
                if text.startswith(_CLOSE, k):
                    pos = k + len(_CLOSE)
                    out.add(_call_from_object(obj, text[start:pos]))
                    continue
                partial_close = n - k < len(_CLOSE) and _CLOSE.startswith(text[k:])
                if partial_close or text.startswith(_OPEN, k):  # never closed, but complete: accepted
                    pos = k if text.startswith(_OPEN, k) else n
                    out.add(_call_from_object(obj, text[start:pos]))
                    continue
        # Otherwise: the body runs to the closing tag, or (unclosed) to the next opening tag or the end.
        next_open = text.find(_OPEN, body_start)
        limit = next_open if next_open >= 0 else n
        close = text.find(_CLOSE, body_start, limit)
        if close < 0:
            pos = limit
            out.add(_error("unclosed_tag", f"{_OPEN} is never closed by {_CLOSE}", text[start:pos]))
            continue
        pos = close + len(_CLOSE)
        span = text[start:pos]
        obj = _loads(text[body_start:close], span, f"the body of {_OPEN}")
        out.add(obj if isinstance(obj, ParseError) else _call_from_object(obj, span))


def _parse_llama3(text: str, out: _Collector) -> None:
    """An optional ``<|python_tag|>`` (text before it is content), then JSON objects ``{"name": ..., "parameters":
    {...}}`` separated by ``;``, ``,`` or newlines, or a JSON list of them.

    Without the tag, the text is a call only when it starts with ``{`` or ``[{``; anything else is a plain message.
    Text after the last object is content. After a JSON error the parser resumes at the next separator + ``{``."""
    tag = text.find(_PYTHON_TAG)
    if tag >= 0:
        out.content.append(text[:tag])
        body = text[tag + len(_PYTHON_TAG) :]
    elif _LLAMA_START.match(text):
        body = text
    else:
        out.content.append(text)
        return
    body = body.rstrip()
    for token in _LLAMA_END_TOKENS:
        body = body.removesuffix(token).rstrip()
    pos, n = 0, len(body)
    while True:
        while pos < n and body[pos] in _LLAMA_SEPARATORS:
            pos += 1
        if pos >= n:
            return
        if not _LLAMA_START.match(body, pos):
            if tag >= 0 and not out.attempts:  # the tag promised a call, but no JSON follows it
                out.add(_error("invalid_json", f"no JSON call after {_PYTHON_TAG}", body[pos:]))
            else:
                out.content.append(body[pos:])
            return
        if out.full(body[pos:]):
            return
        try:
            value, end = _DECODER.raw_decode(body, pos)
        except RecursionError:
            out.add(_error("too_deep", "the tool call JSON is nested too deeply to decode", body[pos:]))
            return
        except ValueError as exc:
            resync = _LLAMA_RESYNC.search(body, pos + 1)
            end = resync.start() if resync else n
            out.add(_error("invalid_json", f"the tool call is not valid JSON: {exc}", body[pos:end]))
            pos = end
            continue
        span = body[pos:end]
        for item in value if isinstance(value, list) else [value]:
            if out.full(span):
                return
            out.add(_call_from_object(item, span))
        pos = end


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _jsonable(value: Any) -> Any:
    """Map a literal to JSON types (tuples become lists); raise TypeError for sets, bytes, complex numbers."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise TypeError("dict keys must be strings")
        return {key: _jsonable(item) for key, item in value.items()}
    raise TypeError(f"{type(value).__name__} values are not JSON")


def _unparse(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except (ValueError, TypeError, RecursionError):  # pragma: no cover - nodes come from ast.parse
        return ""


def _call_from_node(node: ast.expr) -> _Result:
    span = _unparse(node)
    if not isinstance(node, ast.Call):
        return _error("not_a_call", f"expected a call like f(x=1), got {type(node).__name__}", span)
    name = _dotted(node.func)
    if name is None:
        return _error("missing_name", "the called object must be a (dotted) name", span)
    if node.args:
        return _error("positional_argument", f"{name}: arguments must be given by keyword", span)
    arguments: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            return _error("bad_arguments", f"{name}: **unpacking is not allowed", span)
        if kw.arg in arguments:
            return _error("bad_arguments", f"{name}: argument {kw.arg!r} given twice", span)
        if any(isinstance(sub, ast.Call) for sub in ast.walk(kw.value)):
            return _error("nested_call", f"{name}: argument {kw.arg!r} is a call, not a literal", span)
        try:
            value = ast.literal_eval(kw.value)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            shown = _unparse(kw.value)[:80]
            return _error("bad_arguments", f"{name}: argument {kw.arg!r} is not a literal: {shown}", span)
        try:
            arguments[kw.arg] = _jsonable(value)
        except (TypeError, RecursionError) as exc:
            return _error("bad_arguments", f"{name}: argument {kw.arg!r} is not JSON: {exc}", span)
    return ToolCall(name=name, arguments=arguments)


def _parse_pythonic(text: str, out: _Collector) -> None:
    """``[func_a(x=1, y='s'), func_b(z=[1, 2])]``, brackets optional, one call per line also accepted, inside an
    optional code fence.

    Parsed with `ast` only, values with `ast.literal_eval` per keyword; nothing is ever evaluated. Positional
    arguments, ``**kwargs``, nested calls, names, sets or bytes as values are errors of that call only; a syntax
    error fails the whole list (as BFCL's own decoder does). Tuples become lists."""
    source = text.strip()
    fenced = _FENCE.match(source)
    if fenced:
        source = fenced.group(1).strip()
    if source == "[]":
        return
    if not _PY_START.match(source):
        out.content.append(text)
        return
    try:
        module = ast.parse(source, mode="exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        kind = "too_deep" if isinstance(exc, RecursionError | MemoryError) else "syntax_error"
        reason = getattr(exc, "msg", None) or str(exc) or type(exc).__name__
        out.add(_error(kind, f"not a Python call list: {reason}", source))
        return
    nodes: list[ast.expr] = []
    for statement in module.body:
        if not isinstance(statement, ast.Expr):
            out.add(_error("not_a_call", "expected calls, got a statement", _unparse(statement)))
            continue
        value = statement.value
        nodes.extend(value.elts if isinstance(value, ast.List | ast.Tuple) else [value])
    for node in nodes:
        if out.full(source):
            return
        out.add(_call_from_node(node))


_PARSERS = {"hermes": _parse_hermes, "llama3": _parse_llama3, "pythonic": _parse_pythonic}


@dataclass(frozen=True)
class ToolCallParser:
    """The parser for one output style; the same instance serves rollouts, SFT checks and evaluation.

    Bounds: a text over `max_chars` is not parsed (one ``too_long`` error); after `max_calls` call attempts one
    ``too_many_calls`` error is recorded and the rest ignored; nesting deeper than the JSON decoder or the Python
    parser allows is a ``too_deep`` / ``syntax_error`` error. Any other failure would be a bug: a safety net still
    returns an `Action`, with an ``internal_error``."""

    style: str = "hermes"
    max_chars: int = DEFAULT_MAX_CHARS
    max_calls: int = DEFAULT_MAX_CALLS

    def __post_init__(self) -> None:
        if self.style not in PARSER_STYLES:
            raise ValueError(f"style={self.style!r} is unknown; use one of {', '.join(PARSER_STYLES)}")
        if self.max_chars < 1 or self.max_calls < 1:
            raise ValueError(f"max_chars={self.max_chars} and max_calls={self.max_calls} must both be >= 1")

    def parse(self, text: str) -> Action:
        """Split `text` into content, tool calls and parse errors; never raises on any string."""
        if len(text) > self.max_chars:
            message = f"the text has {len(text)} characters, over the limit of {self.max_chars}; not parsed"
            return Action(content=text.strip(), parse_errors=(_error("too_long", message, text),))
        out = _Collector(self.max_calls)
        try:
            _PARSERS[self.style](text, out)
        except Exception as exc:  # pragma: no cover - a safety net: every known failure is caught where it occurs
            out.errors.append(_error("internal_error", f"the parser failed: {type(exc).__name__}: {exc}", text))
        return out.action()

    def format(self, calls: ToolCall | list[ToolCall] | tuple[ToolCall, ...]) -> str:
        return format_tool_calls([calls] if isinstance(calls, ToolCall) else calls, self.style)


def parse_tool_calls(
    text: str, style: str = "hermes", *, max_chars: int = DEFAULT_MAX_CHARS, max_calls: int = DEFAULT_MAX_CALLS
) -> Action:
    """Parse the tool calls in `text` written in `style` ("hermes", "llama3" or "pythonic")."""
    return ToolCallParser(style, max_chars=max_chars, max_calls=max_calls).parse(text)


def _format_pythonic(call: ToolCall) -> str:
    if not _DOTTED_NAME.match(call.name) or any(keyword.iskeyword(part) for part in call.name.split(".")):
        raise ValueError(f"tool name {call.name!r} is not a Python (dotted) name; the pythonic style cannot show it")
    if not isinstance(call.arguments, dict):
        raise ValueError(f"{call.name}: pythonic calls need dict arguments, got {type(call.arguments).__name__}")
    parts = []
    for key, value in call.arguments.items():
        if not (isinstance(key, str) and key.isidentifier()) or keyword.iskeyword(key):
            raise ValueError(f"{call.name}: argument name {key!r} is not a Python identifier")
        parts.append(f"{key}={value!r}")
    return f"{call.name}({', '.join(parts)})"


def format_tool_call(call: ToolCall, style: str = "hermes") -> str:
    """Render one call as the model would write it in `style`; `parse_tool_calls` reads it back."""
    return format_tool_calls([call], style)


def format_tool_calls(calls: list[ToolCall] | tuple[ToolCall, ...], style: str = "hermes") -> str:
    """Render several calls in `style`: hermes blocks one per line, llama3 objects one per line, a pythonic list."""
    if style == "hermes":
        blocks = (json.dumps({"name": c.name, "arguments": c.arguments}, ensure_ascii=False) for c in calls)
        return "\n".join(f"{_OPEN}\n{block}\n{_CLOSE}" for block in blocks)
    if style == "llama3":
        return "\n".join(json.dumps({"name": c.name, "parameters": c.arguments}, ensure_ascii=False) for c in calls)
    if style == "pythonic":
        return "[" + ", ".join(_format_pythonic(c) for c in calls) + "]"
    raise ValueError(f"style={style!r} is unknown; use one of {', '.join(PARSER_STYLES)}")
