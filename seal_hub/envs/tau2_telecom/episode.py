"""One tau2 telecom episode in solo mode: the ticket, the agent's and the phone's tools, tau2's evaluator.

Solo mode (tau2's `LLMSoloAgent` + `DummyUser`): there is no user to talk to; the agent gets tau2's solo system
prompt (instructions, the domain policy, the ticket) and both tool sets, the agent's (customer database) and
the user's (the phone), and solves the ticket by calls alone. `reset()` builds a fresh solo environment from
the task's initial state; calls run through tau2's own `Environment.get_response` (tau2's result text and
error flag); the episode ends when the agent calls `done` (tau2's stop tool) or sends a message without
calls. The trajectory, as tau2 messages, then goes to tau2's `evaluate_simulation` (evaluation type ALL, as
tau2's runner uses) and the reward is tau2's. More than `max_steps` calling steps end it as tau2's
`max_steps` does (reward 0).

Two protocol choices: tau2 puts the ticket only in the system prompt and sends no user message; chat templates
want one, so the ticket is also the first user message. And tau2's solo orchestrator counts a message without
calls as an agent error; here it ends the agent's turn, as in every suite, and counts as the stop.

Not covered: the user simulator (airline, retail; see the README).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from seal_hub.envs.arguments import decode_arguments
from seal_hub.envs.episode import EpisodeBase, parse_error_results
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
from seal_hub.envs.tau2_telecom.tasks import TelecomTask

DEFAULT_MAX_STEPS = 100
STOP_TOOL = "done"
_STOP_SCHEMA = {
    "type": "function",
    "function": {
        "name": STOP_TOOL,
        "description": "Call this function when you are done with the task.",
        "parameters": {"type": "object", "properties": {}, "required": []},
    },
}


def solo_environment():
    from tau2.domains.telecom.environment import get_environment

    return get_environment(solo_mode=True)


def system_prompt(environment, task: TelecomTask) -> str:
    from tau2.agent.llm_agent import AGENT_SOLO_INSTRUCTION, SYSTEM_PROMPT_SOLO, LLMSoloAgent

    instruction = AGENT_SOLO_INSTRUCTION.format(
        stop_function_name=LLMSoloAgent.STOP_FUNCTION_NAME, stop_token=LLMSoloAgent.STOP_TOKEN
    )
    return SYSTEM_PROMPT_SOLO.format(
        agent_instruction=instruction, domain_policy=environment.get_policy(), ticket=task.ticket
    )


class TelecomEpisode(EpisodeBase):
    """A tau2 telecom task solved solo; see the module docstring. `config` is accepted for the engine's sake and
    not used (tau2's budget is `max_steps` over the whole episode)."""

    def __init__(self, task: TelecomTask, config: Any = None, max_steps: int = DEFAULT_MAX_STEPS) -> None:
        super().__init__(task)
        self.max_steps = max_steps
        self._environment = None

    def _start(self) -> Observation:
        state = self.task.tau2.initial_state
        self._environment = solo_environment()
        history = list(state.message_history or []) if state is not None else []
        self._environment.set_state(
            initialization_data=state.initialization_data if state is not None else None,
            initialization_actions=state.initialization_actions if state is not None else None,
            message_history=history,
        )
        tools = self._environment.get_tools() + self._environment.get_user_tools()
        self._tools = tuple(t.openai_schema for t in tools) + (_STOP_SCHEMA,)
        self._messages: list[Any] = history
        self._steps = self._calls = 0
        self._verdict: TurnVerdict | None = None
        self._truncated = False
        messages = (Message("system", system_prompt(self._environment, self.task)), Message("user", self.task.ticket))
        return Observation(0, messages=messages, tools=self._tools)

    def _step(self, action: Action) -> StepResult:
        stop = [c for c in action.tool_calls if c.name == STOP_TOOL]
        if stop or not (action.tool_calls or action.parse_errors):
            self._calls += len(action.tool_calls)
            return self._finish()
        self._steps += 1
        if self._steps > self.max_steps:
            self._truncated = True
            return StepResult(Observation(0, tools=self._tools), done=True, truncated=True, reward=0.0)
        results = self._run(action.tool_calls)
        results += parse_error_results(action)
        return StepResult(Observation(0, tool_results=results, tools=self._tools))

    def _release(self) -> None:
        self._environment = None

    @property
    def done(self) -> bool:
        return self._verdict is not None or self._truncated

    @property
    def tools(self) -> tuple[dict[str, Any], ...]:
        return self._tools

    @property
    def messages(self) -> tuple[Any, ...]:
        """The trajectory as tau2 messages (what the evaluator reads)."""
        return tuple(self._messages)

    @property
    def verdict(self) -> EpisodeVerdict:
        return EpisodeVerdict(() if self._verdict is None else (self._verdict,), 1, self._truncated)

    def _run(self, calls: tuple[ToolCall, ...]) -> tuple[ToolResult, ...]:
        from tau2.data_model.message import AssistantMessage
        from tau2.data_model.message import ToolCall as Tau2Call

        results: list[ToolResult | None] = []
        valid = []
        for index, call in enumerate(calls):
            arguments, message = decode_arguments(call.arguments)
            if arguments is None or not isinstance(call.name, str):
                results.append(
                    ToolResult(
                        call, f"Error: {message or 'the call has no tool name'}", ErrorKind.ARGUMENTS_NOT_OBJECT
                    )
                )
                continue
            results.append(None)
            valid.append(
                (
                    index,
                    call,
                    Tau2Call(
                        id=call.id or f"call_{self._calls + index}",
                        name=call.name,
                        arguments=arguments,
                        requestor="assistant",
                    ),
                )
            )
        self._calls += len(calls)
        if valid:
            self._messages.append(AssistantMessage(role="assistant", tool_calls=[v[2] for v in valid], cost=0.0))
        for index, call, tau2_call in valid:
            reply = self._environment.get_response(tau2_call)
            self._messages.append(reply)
            kind = ErrorKind.TOOL_ERROR if reply.error else None
            results[index] = ToolResult(call, str(reply.content), kind, executed=True)
        return tuple(r for r in results if r is not None)

    def _finish(self) -> StepResult:
        from tau2.agent.llm_agent import LLMSoloAgent
        from tau2.data_model.message import AssistantMessage
        from tau2.data_model.simulation import SimulationRun, TerminationReason
        from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation

        self._messages.append(AssistantMessage(role="assistant", content=LLMSoloAgent.STOP_TOKEN, cost=0.0))
        now = datetime.now().isoformat()
        simulation = SimulationRun(
            id=f"seal_hub-{self.task.id}",
            task_id=self.task.tau2.id,
            start_time=now,
            end_time=now,
            duration=0.0,
            termination_reason=TerminationReason.AGENT_STOP,
            messages=self._messages,
        )
        try:
            info = evaluate_simulation(simulation, self.task.tau2, EvaluationType.ALL, True, "telecom")
            reward, note = float(info.reward), _note(info)
        except Exception as exc:  # tau2's evaluator failing on a trajectory is a failed episode, labelled
            reward, note = 0.0, f"tau2:evaluator_error: {exc}"
        passed = reward == 1.0
        self._verdict = TurnVerdict(0, True, self._calls, passed, None if passed else note)
        return StepResult(Observation(0, tools=self._tools), done=True, reward=self.verdict.reward)


def _note(info: Any) -> str:
    """A short error type from tau2's reward breakdown (which basis scored 0)."""
    breakdown = info.reward_breakdown or {}
    failed = [str(getattr(k, "value", k)).lower() for k, v in breakdown.items() if v != 1.0]
    return "tau2:" + ("+".join(failed) if failed else json.dumps(info.info or {}, default=str)[:80])
