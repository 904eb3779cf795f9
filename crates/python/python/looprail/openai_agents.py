"""looprail's guard in the OpenAI Agents SDK (``openai-agents``): run hooks around each model
call, and a tool input and a tool output guardrail on each function tool.

    from agents import Runner
    from looprail.openai_agents import LooprailGuard

    guard = LooprailGuard()
    result = await Runner.run(guard.protect(agent), "fix the build", hooks=guard.hooks)

The input guardrail answers a denied call with the reason (the model reads it as the tool's
output); the output guardrail adds a nudge to a result. When the guard stops the agent, every
further call is answered with the final-answer instruction and the agent's ``tool_choice`` is
set to ``none``, so its next reply is a final answer in text (it is set back at the next run).
``ask`` is called with the guard's question when it wants a human's answer (``True`` lets the
agent go on); without it, that is a stop too.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from agents import Agent, FunctionTool, RunHooks
from agents.items import ModelResponse
from agents.run_context import RunContextWrapper
from agents.tool_guardrails import (
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
    ToolOutputGuardrail,
    ToolOutputGuardrailData,
)

from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage

from looprail._adapter import GuardedAgent

if TYPE_CHECKING:
    from looprail._native import CallDict

__all__ = ["LooprailGuard"]


class _Hooks(RunHooks[Any]):
    def __init__(self, owner: LooprailGuard) -> None:
        self.owner = owner

    async def on_agent_start(self, context: Any, agent: Any) -> None:
        self.owner._start(agent)

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        self.owner._end()

    async def on_llm_start(
        self, context: RunContextWrapper[Any], agent: Any, system_prompt: str | None, input_items: Any
    ) -> None:
        self.owner._before_model(agent)

    async def on_llm_end(self, context: RunContextWrapper[Any], agent: Any, response: ModelResponse) -> None:
        self.owner._model_response(agent, response)


class LooprailGuard(GuardedAgent):
    """looprail's guard for agents of the OpenAI Agents SDK."""

    def _setup(self) -> None:
        self.hooks: RunHooks[Any] = _Hooks(self)
        self.input_guardrail: ToolInputGuardrail[Any] = ToolInputGuardrail(
            guardrail_function=self._input, name="looprail"
        )
        self.output_guardrail: ToolOutputGuardrail[Any] = ToolOutputGuardrail(
            guardrail_function=self._output, name="looprail"
        )
        self._running = False
        self._agent: Any = None
        self._settings: dict[int, Any] = {}

    def protect(self, agent: Agent[Any]) -> Agent[Any]:
        """Adds the guardrails to each of ``agent``'s function tools (and its handoffs' agents).
        A tool object carries one looprail guard: protecting it again replaces the last one."""
        for tool in agent.tools:
            if isinstance(tool, FunctionTool):
                inputs = [g for g in tool.tool_input_guardrails or [] if g.name != "looprail"]
                outputs = [g for g in tool.tool_output_guardrails or [] if g.name != "looprail"]
                tool.tool_input_guardrails = [*inputs, self.input_guardrail]
                tool.tool_output_guardrails = [*outputs, self.output_guardrail]
        for handoff in agent.handoffs:
            if isinstance(handoff, Agent):
                self.protect(handoff)
        return agent

    # -- hooks ------------------------------------------------------------------------------

    def _start(self, agent: Agent[Any]) -> None:
        if self._running:
            return  # a handoff within the run
        self._end()
        self._running = True
        self._final = None
        self.guard.user_message()

    def _end(self) -> None:
        """The run ended: the agents' own tool choice is theirs again."""
        self._running = False
        for key, (target, settings, reset) in list(self._settings.items()):
            target.model_settings = settings
            target.reset_tool_choice = reset
            del self._settings[key]

    def _before_model(self, agent: Agent[Any]) -> None:
        self._agent = agent
        verdict = self.guard.before_model()
        self._heed(verdict)

    def _model_response(self, agent: Agent[Any], response: ModelResponse) -> None:
        self._agent = agent
        calls: list[CallDict] = []
        texts: list[str] = []
        for item in response.output:
            if isinstance(item, ResponseFunctionToolCall):
                calls.append({"id": item.call_id, "name": item.name, "arguments": item.arguments})
            elif isinstance(item, ResponseOutputMessage):
                texts.extend(getattr(part, "text", "") for part in item.content)
        usage = response.usage
        verdict = self.guard.model_response(
            text="".join(texts) or None,
            calls=calls,
            usage={"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        )
        self._heed(verdict)

    # -- tool guardrails --------------------------------------------------------------------

    def _input(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        tool = data.context
        self._agent = data.agent
        answer = self._check(tool.tool_call_id, tool.tool_name, tool.tool_arguments or "{}")
        if answer is not None:
            return ToolGuardrailFunctionOutput.reject_content(answer)
        return ToolGuardrailFunctionOutput.allow()

    def _output(self, data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        output = data.output if isinstance(data.output, str) else str(data.output)
        self._agent = data.agent
        added = self._observe(data.context.tool_call_id, output)
        if added is not None:
            return ToolGuardrailFunctionOutput.reject_content(f"{output}\n\n{added}")
        return ToolGuardrailFunctionOutput.allow()

    def _stop(self, message: str) -> None:
        """Every further call answered with ``message``, and no tools for the next reply."""
        super()._stop(message)
        agent = self._agent
        if isinstance(agent, Agent) and id(agent) not in self._settings:
            self._settings[id(agent)] = (agent, agent.model_settings, agent.reset_tool_choice)
            agent.model_settings = dataclasses.replace(agent.model_settings, tool_choice="none")
            # The SDK sets tool_choice back after each tool call unless told not to.
            agent.reset_tool_choice = False
