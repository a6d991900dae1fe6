"""A generation backend that plays scripted texts: tests drive the rollout engine with known model output."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from seal_hub.generation.backend import Generation, GenerationBackend, GenerationRequest, SamplingConfig
from seal_hub.models.toolcalls import format_tool_calls


class ScriptedBackend(GenerationBackend):
    """`script(session, step_index, request)` returns the text the "model" says (None: an empty generation)."""

    def __init__(self, tokenizer, script: Callable[[str, int, GenerationRequest], str | None], eos: bool = True):
        self.tokenizer = tokenizer
        self.script = script
        self.eos = eos
        self.steps: dict[str, int] = {}
        self.released: list[str] = []

    def release(self, session: str) -> None:
        self.released.append(session)

    def generate(self, requests: list[GenerationRequest], sampling: SamplingConfig) -> list[Generation]:
        out = []
        for request in requests:
            index = self.steps.get(request.session, 0)
            self.steps[request.session] = index + 1
            text = self.script(request.session, index, request)
            ids = [] if text is None else self.tokenizer(text, add_special_tokens=False)["input_ids"]
            if self.eos and text is not None:
                ids.append(self.tokenizer.eos_token_id)
            ids = ids[: request.max_new_tokens or sampling.max_new_tokens]
            finished = bool(ids) and ids[-1] == self.tokenizer.eos_token_id
            out.append(Generation(tuple(ids), tuple(-0.5 for _ in ids), finished))
        return out


def half_right(suite, opening: Sequence[str] = ()):
    """A backend factory for the trainer: rollout 0 of each task answers with the ground truth (reward 1), every
    other rollout says "Done." (reward 0), so each group's rewards differ and GRPO has a gradient. `opening`: what
    rollout 0 says first, before its answers (a call of an unknown tool, say, to draw a recovery hint)."""
    return outcome_backend(suite, {}, opening)


def outcome_backend(suite, outcomes: dict[str, str], opening: Sequence[str] = ()):
    """A backend factory whose rollouts of each task pass or fail by `outcomes[task]`: 'pass' (every rollout
    replays the ground truth, after `opening`), 'fail' (every rollout says "Done."), 'half', the default (rollout 0
    of a rank's run passes, the rest fail)."""

    def script(session, step, request):
        task_id, index = session.split("#")[:2]
        outcome = outcomes.get(task_id, "half")
        if outcome == "fail" or (outcome == "half" and index != "0"):
            return "Done."
        texts = list(opening)
        for calls in suite.task(task_id).ground_truth:
            if calls:
                texts.append(format_tool_calls(calls, "hermes"))
            texts.append("Done.")
        return texts[step]

    return lambda model, tokenizer, step: ScriptedBackend(tokenizer, script)
