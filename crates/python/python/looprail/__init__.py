"""looprail's guard for Python agents, in process.

A ``Guard`` watches one agent's loop: report each step (a user message, the moment before a
model call, the model's reply, each tool call before it runs and its result) and do what the
``Verdict`` says: ``allow``, ``nudge`` (give the model its message), ``deny`` (do not run the
call; the model reads the message instead), ``ask`` (the human decides; with no human at hand,
stop) or ``stop`` (one last model call with no tools and the message as its instruction gives
the user a final answer).

    from looprail import Guard

    guard = Guard()                       # the coding-agent profile; or Guard(config="looprail.toml")
    guard.user_message()
    verdict = guard.before_model()
    verdict = guard.model_response(calls=[{"id": "c1", "name": "bash", "arguments": {"cmd": "make"}}])
    verdict = guard.before_tool("c1", "bash", {"cmd": "make"})
    verdict = guard.after_tool("c1", "make: *** No rule to make target", failed=True)

Adapters for agent frameworks: ``looprail.langchain`` (LangChain and LangGraph agents),
``looprail.openai_agents`` (the OpenAI Agents SDK) and ``looprail.pydantic_ai`` (pydantic-ai).
"""

from looprail._native import Guard, Verdict

__all__ = ["Guard", "Verdict"]
