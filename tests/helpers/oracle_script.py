"""A "model" that says a suite's oracle actions as text: drives any suite's oracle through the rollout engine."""

from __future__ import annotations

from seal_hub.models.toolcalls import format_tool_calls


def oracle_texts(suite, task) -> list[str]:
    """Per step, what the oracle says: its calls in hermes format, and a plain message closing each turn."""
    texts = []
    for turn in suite.oracle_steps(task):
        for action in turn:
            texts.append(format_tool_calls(action.tool_calls, "hermes") if action.tool_calls else action.content)
        if not turn or turn[-1].tool_calls:
            texts.append("Done.")
    return texts


def oracle_script(suite):
    """A `ScriptedBackend` script playing `suite`'s oracle for the task named in each session."""
    cache: dict[str, list[str]] = {}

    def script(session, step, request):
        texts = cache.setdefault(session, oracle_texts(suite, suite.task(session.split("#")[0])))
        return texts[step] if step < len(texts) else "Done."

    return script
