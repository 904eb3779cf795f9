"""looprail's guard as a pydantic-ai capability (``Agent(..., capabilities=[...])``).

    from pydantic_ai import Agent
    from looprail.pydantic_ai import LooprailCapability

    agent = Agent(model, tools=[...], capabilities=[LooprailCapability()])

Each run is a new user message to the guard. Before each model request the guard checks the
budgets; after it, it reads the reply; around each tool call it may answer the call itself
with why it was denied (the tool does not run) or add a nudge to the conversation, after the
result. When the guard stops the agent, the tool calls left are answered with the reason and
the next request goes out with the instruction to answer and no tools to call, so the run ends
with a final answer. ``ask`` is called with the guard's question when it wants a human's answer
(``True`` lets the agent go on); without it, that is a stop too.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart

from looprail._adapter import GuardedAgent

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from pydantic_ai import RunContext
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.tools import ToolDefinition

    from looprail._native import CallDict, Usage

__all__ = ["LooprailCapability"]


def _output(result: Any) -> str:
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, default=str)
    except (TypeError, ValueError):
        return str(result)


class LooprailCapability(GuardedAgent, AbstractCapability[Any]):
    """A capability that runs looprail's guard around every model request and tool call."""

    async def before_run(self, ctx: RunContext[Any]) -> None:
        self.guard.user_message()
        self._final = None

    # -- the model request ----------------------------------------------------------------

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        verdict = self.guard.before_model()
        if self._final is None:
            self._heed(verdict)
        if self._final is not None:
            # The guaranteed final answer: the instruction, for this request only, and no tools.
            final = ModelRequest(parts=[UserPromptPart(self._final)])
            parameters = dataclasses.replace(request_context.model_request_parameters, function_tools=[])
            return dataclasses.replace(
                request_context, messages=[*request_context.messages, final], model_request_parameters=parameters
            )
        if verdict.action == "nudge":
            ctx.enqueue(verdict.message)
        return request_context

    async def after_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        tools = {t.name for t in request_context.model_request_parameters.function_tools}
        if not tools:
            return response
        calls: list[CallDict] = [
            {"id": p.tool_call_id, "name": p.tool_name, "arguments": p.args_as_dict()}
            for p in response.parts
            if isinstance(p, ToolCallPart) and p.tool_name in tools
        ]
        text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
        usage: Usage = {"input_tokens": response.usage.input_tokens, "output_tokens": response.usage.output_tokens}
        verdict = self.guard.model_response(
            text=text or None, calls=calls, usage=usage, model=response.model_name or ""
        )
        self._heed(verdict)
        return response

    # -- the tool call --------------------------------------------------------------------

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        handler: Callable[[dict[str, Any]], Awaitable[Any]],
    ) -> Any:
        answered = self._check(call.tool_call_id, call.tool_name, args)
        if answered is not None:
            return answered
        try:
            result = await handler(args)
        except ModelRetry as retry:
            # The model is told to try again: for the guard, a failed call.
            self.guard.after_tool(call.tool_call_id, retry.message, True)
            raise
        verdict = self._observe(call.tool_call_id, _output(result), False)
        if verdict is not None:
            ctx.enqueue(verdict)
        return result
