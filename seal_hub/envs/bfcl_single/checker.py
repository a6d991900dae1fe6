"""The verdict of one single-turn answer, by bfcl-eval's own rules: `ast_checker` and the relevance rules.

BFCL's evaluator first decodes the model's text into calls, then: for irrelevance categories a turn passes
when nothing decodes to a call; for live_relevance when something does; for the AST categories the decoded
calls go to `ast_checker` with the offered function docs and the answer key. Here the calls arrive already
parsed (`seal_hub.models.toolcalls`), so decoding is: every call has a name and a JSON-object argument set, and no
text failed to parse. The checker is run under the name of a local open model whose config keeps dotted
function names (BFCL renames `a.b` to `a_b` only for APIs that refuse dots; our tools keep BFCL's names).

Importing `ast_checker` imports all of bfcl-eval's model handlers (about 10 s), so it is imported on first use.

Not covered: executing anything (single-turn answers are checked, never run).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from seal_hub.envs.arguments import decode_arguments
from seal_hub.envs.bfcl.extra import require_bfcl_eval
from seal_hub.envs.bfcl_single.tasks import ABSTAIN_CATEGORIES, RELEVANCE_CATEGORIES, SingleTask
from seal_hub.envs.protocol import Action, ToolCall, TurnVerdict

# bfcl-eval looks this name up (with "_" read as "/") in its model table to decide whether to rename dots
CHECKER_MODEL = "Team-ACE_ToolACE-2-8B"


@cache
def _ast_checker():
    require_bfcl_eval()
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    return ast_checker, Language.PYTHON


def decoded_calls(calls: Sequence[ToolCall]) -> list[dict[str, Any]] | None:
    """Calls in BFCL's decoded form `[{name: {argument: value}}]`, or None if one does not decode."""
    out = []
    for call in calls:
        arguments, _ = decode_arguments(call.arguments)
        if arguments is None or not isinstance(call.name, str) or not call.name:
            return None
        out.append({call.name: arguments})
    return out


def check(task: SingleTask, action: Action) -> TurnVerdict:
    """The verdict of `action` as the answer to `task` (one turn, index 0)."""
    calls = action.tool_calls
    decoded = None if action.parse_errors else decoded_calls(calls)
    has_call = bool(decoded)

    def verdict(passed: bool, error_type: str | None = None) -> TurnVerdict:
        return TurnVerdict(0, task.expects_calls, len(calls), passed, None if passed else error_type)

    if task.category in ABSTAIN_CATEGORIES:
        return verdict(not has_call, "irrelevance_error:decoder_success")
    if task.category in RELEVANCE_CATEGORIES:
        return verdict(has_call, "relevance_error:decoder_failed")
    if not calls and not action.parse_errors:
        return verdict(False, "ast_decoder:decoder_failed")
    if decoded is None:
        return verdict(False, "ast_decoder:decoder_wrong_output_format")
    ast_checker, language = _ast_checker()
    result = ast_checker(
        [dict(doc) for doc in task.functions],
        decoded,
        [dict(call) for call in task.possible_answer or ()],
        language,
        task.bfcl_category,
        CHECKER_MODEL,
    )
    return verdict(bool(result["valid"]), result.get("error_type"))
