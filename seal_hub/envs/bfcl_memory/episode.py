"""One BFCL memory episode: the scenario's prerequisite conversations, then the question, on a private memory.

Design. BFCL runs each prerequisite conversation as its own chat, flushing the memory to a snapshot file after
each, and then asks every question of the scenario in a fresh chat that starts from the last snapshot. The
step protocol has one conversation per episode and the rollout engine batches episodes independently, so a
question cannot wait for another episode's writes. A task is therefore one episode whose first user turns are
the prerequisite conversations and whose last turn is the question: the policy drives the whole chain itself,
on a memory of its own (`backend.MemoryStore`), and nothing leaks between episodes. Each conversation (and the
question) opens with BFCL's own memory instruction prompt, rendered at that moment with the memory's current
core content, exactly as BFCL renders it at the start of each of its chats.

The price: earlier conversations stay in the chat (BFCL starts each chat empty), so the policy could answer
from context instead of memory, and a chain is long (up to ~25k tokens for the student and customer scenarios):
give the engine a long context, or episodes end by the context limit (reward 0).

Scoring is BFCL's: the prerequisite turns are not scored (their verdicts pass); the question passes when
`agentic_checker` finds an accepted answer in the final message. Calls are validated and executed as in the
multi-turn suite; more than `max_steps_per_turn` calling steps in a turn (the engine's `EpisodeSettings`; 20, BFCL's
limit, by default) end the episode, force-terminated.

Not covered: BFCL's per-conversation context reset (see above).
"""

from __future__ import annotations

from typing import Any

from seal_hub.envs.arguments import decode_arguments
from seal_hub.envs.bfcl.execution import execute
from seal_hub.envs.bfcl.extra import require_bfcl_eval
from seal_hub.envs.bfcl.tools import validate_arguments
from seal_hub.envs.bfcl_memory.backend import MemoryStore, memory_tools
from seal_hub.envs.bfcl_memory.tasks import MemoryTask
from seal_hub.envs.episode import EpisodeBase, EpisodeSettings, parse_error_results
from seal_hub.envs.protocol import (
    Action,
    EpisodeVerdict,
    ErrorKind,
    Message,
    Observation,
    StepResult,
    ToolCall,
    ToolResult,
    TurnVerdict,
)


def instruction_turn(task: MemoryTask, turn: tuple[Message, ...], instance: Any) -> tuple[Message, ...]:
    """`turn` opening a conversation: BFCL's memory instruction system prompt (with the current core memory)."""
    require_bfcl_eval()
    from bfcl_eval.model_handler.utils import add_memory_instruction_system_prompt

    prompts = [[m.to_chat() for m in turn]]
    prompts = add_memory_instruction_system_prompt(prompts, task.category, task.scenario, instance)
    return tuple(Message(m["role"], m["content"]) for m in prompts[0])


def check_answer(task: MemoryTask, turn: int, text: str, model_calls: int) -> TurnVerdict:
    require_bfcl_eval()
    from bfcl_eval.eval_checker.agentic_eval.agentic_checker import agentic_checker

    if not text.strip():
        return TurnVerdict(turn, False, model_calls, False, "agentic:no_last_message")
    result = agentic_checker(text, list(task.answers))
    passed = bool(result["valid"])
    return TurnVerdict(turn, False, model_calls, passed, None if passed else result.get("error_type"))


class MemoryEpisode(EpisodeBase):
    """The prerequisite chain and the question of one `MemoryTask`; see the module docstring."""

    def __init__(self, task: MemoryTask, config: EpisodeSettings | None = None) -> None:
        super().__init__(task)
        self.max_steps_per_turn = (config or EpisodeSettings()).max_steps_per_turn
        self._tools = memory_tools(task.class_name)
        # (conversation index, turn within it) of every user turn, the question last
        self._plan = [(c, t) for c, turns in enumerate(task.conversations) for t in range(len(turns))]
        self._store: MemoryStore | None = None

    def _start(self) -> Observation:
        if self._store is not None:
            self._store.close()
        self._store = MemoryStore(self.task.class_name, self.task.category, self.task.scenario)
        self._turn = 0
        self._verdicts: list[TurnVerdict] = []
        self._calls_in_turn = self._steps_in_turn = 0
        self._done = self._force_terminated = False
        return Observation(0, messages=self._messages(0), tools=self.task.tools)

    def _step(self, action: Action) -> StepResult:
        if not (action.tool_calls or action.parse_errors):
            return self._end_turn(action)
        self._steps_in_turn += 1
        if self._steps_in_turn > self.max_steps_per_turn:
            self._done = self._force_terminated = True
            return StepResult(Observation(self._turn, tools=self.task.tools), done=True, truncated=True, reward=0.0)
        results = tuple(self._call(call) for call in action.tool_calls)
        results += parse_error_results(action)
        self._calls_in_turn += len(action.tool_calls)
        return StepResult(Observation(self._turn, tool_results=results, tools=self.task.tools))

    def _release(self) -> None:
        if self._store is not None:
            self._store.close()

    @property
    def done(self) -> bool:
        return self._done

    @property
    def tools(self) -> tuple[dict[str, Any], ...]:
        return self.task.tools

    @property
    def memory(self) -> Any:
        """The episode's memory backend instance (None once closed)."""
        return None if self._store is None else self._store.instance

    @property
    def verdict(self) -> EpisodeVerdict:
        return EpisodeVerdict(tuple(self._verdicts), self.task.num_turns, self._force_terminated)

    def _messages(self, turn: int) -> tuple[Message, ...]:
        conversation, index = self._plan[turn]
        messages = self.task.conversations[conversation][index]
        return instruction_turn(self.task, messages, self._store.instance) if index == 0 else messages

    def _end_turn(self, action: Action) -> StepResult:
        turn = self._turn
        if turn == len(self._plan) - 1:
            self._verdicts.append(check_answer(self.task, turn, action.content, self._calls_in_turn))
            self._done = True
            return StepResult(Observation(turn, tools=self.task.tools), done=True, reward=self.verdict.reward)
        self._verdicts.append(TurnVerdict(turn, False, self._calls_in_turn, True))
        self._turn += 1
        self._calls_in_turn = self._steps_in_turn = 0
        return StepResult(Observation(self._turn, messages=self._messages(self._turn), tools=self.task.tools))

    def _call(self, call: ToolCall) -> ToolResult:
        tool = self._tools.get(call.name) if isinstance(call.name, str) else None
        if tool is None:
            available = ", ".join(self._tools)
            return ToolResult(
                call,
                f"Error: unknown tool {call.name!r}; the available tools are: {available}",
                ErrorKind.UNKNOWN_TOOL,
            )
        arguments, message = decode_arguments(call.arguments)
        if arguments is None:
            return ToolResult(call, f"Error: {message}", ErrorKind.ARGUMENTS_NOT_OBJECT)
        problem = validate_arguments(tool, arguments)
        if problem is not None:
            kind, message = problem
            return ToolResult(call, f"Error: {message}", kind)
        content, kind = execute(self._store.instances, tool, arguments)
        return ToolResult(call, content, kind, executed=True)
