"""One call into a user environment (a tool, `reset` or `get_reward`): in a worker thread, under a time limit,
its prints captured, its result turned into text for the model.

`run_limited` runs the call in a daemon thread and waits `timeout_s` seconds. A call that returns or raises gives
its value or its exception (any `Exception`; a `BaseException` such as `SystemExit` too, so a tool cannot end the
run). A call still running at the limit is abandoned: Python cannot kill a thread, so a hung call keeps its thread
(a daemon: it never holds up the process's exit) and whatever it holds; the episode that made it ends there
(`seal_hub.envs.user.episode`) and never touches that instance again. An async call (a coroutine function, or any
call that returns an awaitable: TRL 1.16 accepts async tools, `get_reward` and reward functions) is awaited on one
event loop that runs in its own daemon thread for the whole process (`event_loop`), as TRL runs its async tools on
one loop: a client made by one call (an async HTTP session) is still usable by the next. The time limit covers the
call and its awaiting together; an awaitable still pending at the limit is cancelled. What the call prints to stdout
while it runs (its synchronous part) is captured (`CallOutcome.printed`), not written over the command's own
output; prints of a call that was abandoned and goes on printing later are not captured.

`as_text` is what the model sees of a tool's return value: a string as it is, None as an empty result, anything
JSON can write as JSON, anything else as `str()`; longer than `max_chars`, it is cut with a marker that says how
much was left out.

Not covered: which calls are made (`seal_hub.envs.user.episode`).
"""

from __future__ import annotations

import asyncio
import inspect
import io
import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CallOutcome:
    """How one call ended: its value, the exception it raised, or that it ran past the limit; what it printed."""

    value: Any = None
    error: BaseException | None = None
    timed_out: bool = False
    printed: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out

    @property
    def error_class(self) -> str:
        """The name of the exception's class ('TimeoutError' for a call past the limit), '' when it returned."""
        if self.timed_out:
            return "TimeoutError"
        return type(self.error).__name__ if self.error is not None else ""


class _StdoutRouter(io.TextIOBase):
    """sys.stdout while calls run: the writes of a call's thread go to that call's buffer, all others through."""

    def __init__(self, target: Any) -> None:
        self.target = target
        self.buffers: dict[int, io.StringIO] = {}

    def write(self, text: str) -> int:
        buffer = self.buffers.get(threading.get_ident())
        return buffer.write(text) if buffer is not None else self.target.write(text)

    def flush(self) -> None:
        if threading.get_ident() not in self.buffers:
            self.target.flush()


_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def event_loop() -> asyncio.AbstractEventLoop:
    """The process's one event loop for async calls, started on first use in a daemon thread."""
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            threading.Thread(target=serve, name="seal-hub-async-calls", daemon=True).start()
            ready.wait()
            _loop = loop
        return _loop


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _await_limited(awaitable: Any, timeout_s: float, printed: str) -> CallOutcome:
    """The value of `awaitable`, run on `event_loop()` and waited on for `timeout_s` (cancelled past it)."""
    future = asyncio.run_coroutine_threadsafe(_awaited(awaitable), event_loop())
    try:
        return CallOutcome(future.result(max(timeout_s, 0.0)), printed=printed)
    except TimeoutError as exc:
        if future.done():  # the coroutine itself raised TimeoutError
            return CallOutcome(error=exc, printed=printed)
        future.cancel()
        return CallOutcome(timed_out=True, printed=printed)
    except BaseException as exc:  # noqa: BLE001 -- the coroutine's own failure, as a sync call's
        return CallOutcome(error=exc, printed=printed)


def run_limited(function: Callable[..., Any], kwargs: dict[str, Any], timeout_s: float) -> CallOutcome:
    """`function(**kwargs)` in a worker thread, waited on for `timeout_s` seconds; an awaitable it returns is
    awaited on the shared event loop within what is left of the limit (module docstring)."""
    started = time.monotonic()
    result: dict[str, Any] = {}
    buffer = io.StringIO()
    with _lock:
        router = sys.stdout if isinstance(sys.stdout, _StdoutRouter) else _StdoutRouter(sys.stdout)
        installed = router is not sys.stdout
        sys.stdout = router

    def work() -> None:
        router.buffers[threading.get_ident()] = buffer
        try:
            result["value"] = function(**kwargs)
        except BaseException as exc:  # noqa: BLE001 -- a tool's SystemExit or KeyboardInterrupt is its failure
            result["error"] = exc

    thread = threading.Thread(target=work, name=f"seal-hub-call-{getattr(function, '__name__', 'call')}", daemon=True)
    try:
        thread.start()
        thread.join(timeout_s)
    finally:
        with _lock:
            if installed and sys.stdout is router:
                sys.stdout = router.target
    if thread.is_alive():
        return CallOutcome(timed_out=True, printed=buffer.getvalue())
    router.buffers.pop(thread.ident or 0, None)
    value = result.get("value")
    if "error" not in result and inspect.isawaitable(value):
        return _await_limited(value, timeout_s - (time.monotonic() - started), buffer.getvalue())
    return CallOutcome(value, result.get("error"), False, buffer.getvalue())


def truncate(text: str, max_chars: int) -> str:
    """`text`, or its first characters and a marker saying how many of how many are shown."""
    if len(text) <= max_chars:
        return text
    marker = f"\n[truncated: {max_chars} of {len(text)} characters shown]"
    return text[: max(0, max_chars - len(marker))] + marker


def as_text(value: Any, max_chars: int) -> str:
    """A tool's return value as the text of its observation (module docstring)."""
    if value is None:
        text = ""
    elif isinstance(value, str):
        text = value
    elif isinstance(value, bytes | bytearray):
        text = bytes(value).decode("utf-8", errors="replace")
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            try:
                text = str(value)
            except Exception as exc:  # noqa: BLE001 -- even str() of a user's object can raise
                text = f"<{type(value).__name__} that cannot be shown: {type(exc).__name__}>"
    return truncate(text, max_chars)
