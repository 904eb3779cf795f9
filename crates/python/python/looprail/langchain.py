"""looprail's guard as LangChain agent middleware (``langchain.agents.create_agent``).

    from langchain.agents import create_agent
    from looprail.langchain import LooprailMiddleware

    agent = create_agent(model, tools, middleware=[LooprailMiddleware()])

Around each model call the guard checks the budgets and reads the reply; around each tool call
it may deny the call (the model reads why) or add a nudge to its result. When the guard stops
the agent, the tool calls left are answered with the reason and one last model call, with no
tools, gives the user a final answer. ``ask`` is called with the guard's question when it wants
a human's answer (``True`` lets the agent go on); without it, that is a stop too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse, ToolCallRequest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from looprail._adapter import GuardedAgent

if TYPE_CHECKING:
    from looprail._native import CallDict, Usage

__all__ = ["LooprailMiddleware"]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p if isinstance(p, str) else str(p.get("text", "")) for p in content if isinstance(p, (str, dict))]
        return "".join(parts)
    return str(content)


class LooprailMiddleware(GuardedAgent, AgentMiddleware):
    """Agent middleware that runs looprail's guard around every model and tool call."""

    def _setup(self) -> None:
        AgentMiddleware.__init__(self)
        self._humans = 0

    # -- the model call -------------------------------------------------------------------

    def _before(self, request: ModelRequest) -> ModelRequest:
        humans = sum(1 for m in request.messages if isinstance(m, HumanMessage))
        if humans > self._humans:
            self._humans = humans
            self._final = None
            self.guard.user_message()
        verdict = self.guard.before_model()
        if self._final is None:
            self._heed(verdict)
        if self._final is not None:
            # The guaranteed final answer: the instruction, and no tools to call.
            return request.override(messages=[*request.messages, HumanMessage(self._final)], tools=[])
        if verdict.action == "nudge":
            return request.override(messages=[*request.messages, HumanMessage(verdict.message)])
        return request

    def _after(self, request: ModelRequest, response: ModelResponse) -> None:
        if not request.tools:
            return
        reply = next((m for m in reversed(response.result) if isinstance(m, AIMessage)), None)
        if reply is None:
            return
        calls: list[CallDict] = [
            {"id": c.get("id") or "", "name": c["name"], "arguments": c.get("args", {})} for c in reply.tool_calls
        ]
        spent = reply.usage_metadata
        usage: Usage = {}
        if spent is not None:
            usage = {"input_tokens": spent.get("input_tokens", 0), "output_tokens": spent.get("output_tokens", 0)}
        verdict = self.guard.model_response(
            text=_text(reply.content) or None,
            calls=calls,
            usage=usage or None,
            model=str(reply.response_metadata.get("model_name", "")),
        )
        self._heed(verdict)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        request = self._before(request)
        response = handler(request)
        self._after(request, response)
        return response

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        request = self._before(request)
        response = await handler(request)
        self._after(request, response)
        return response

    # -- the tool call --------------------------------------------------------------------

    def _answer(self, request: ToolCallRequest) -> ToolMessage | None:
        call = request.tool_call
        message = self._check(call.get("id") or "", call["name"], call.get("args", {}))
        if message is None:
            return None
        return ToolMessage(content=message, tool_call_id=call.get("id") or "", name=call["name"], status="error")

    def _read(self, request: ToolCallRequest, result: Any) -> Any:
        if not isinstance(result, ToolMessage):
            return result
        added = self._observe(request.tool_call.get("id") or "", _text(result.content), result.status == "error")
        if added is not None:
            result.content = f"{_text(result.content)}\n\n{added}"
        return result

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Any]) -> Any:
        answered = self._answer(request)
        if answered is not None:
            return answered
        return self._read(request, handler(request))

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Any]]
    ) -> Any:
        answered = self._answer(request)
        if answered is not None:
            return answered
        return self._read(request, await handler(request))
