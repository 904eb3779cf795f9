"""What every framework adapter does the same way: the guard, the human to ask, and the stop.

An adapter maps its framework's seams onto these calls; the framework's own types stay in the
adapter's module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Literal

from looprail._native import Guard

if TYPE_CHECKING:
    from looprail._native import Verdict


class GuardedAgent:
    """One agent's guard, with the ladder's answers turned into what the agent is told."""

    def __init__(
        self,
        guard: Guard | None = None,
        *,
        profile: Literal["coding-agent", "task"] | None = None,
        config: Any = None,
        ask: Callable[[str], bool] | None = None,
    ) -> None:
        self.guard = guard if guard is not None else Guard(profile, config)
        self.ask = ask
        # Once the guard has stopped the agent: the instruction every further call is answered
        # with, until the next user message.
        self._final: str | None = None
        self._setup()

    def _setup(self) -> None:
        """What an adapter adds to its state (its framework's objects), after the guard's."""

    def _check(self, call_id: str, name: str, arguments: Any) -> str | None:
        """The answer a tool call gets instead of running (why it was denied, or the stop's
        instruction), recorded as its failed result; ``None`` lets the call run."""
        if self._final is not None:
            message = self._final
        else:
            verdict = self.guard.before_tool(call_id, name, arguments)
            if verdict.action != "deny" and self._goes_on(verdict):
                return None
            if verdict.action != "deny":
                self._stop(verdict.message)
            message = verdict.message
        self.guard.after_tool(call_id, message, True)
        return message

    def _observe(self, call_id: str, output: str, failed: bool = False) -> str | None:
        """Records a tool's result; what the agent must read after it (a nudge, or the stop's
        instruction), or ``None``."""
        verdict = self.guard.after_tool(call_id, output, failed)
        if verdict.action == "nudge":
            return verdict.message
        if not self._goes_on(verdict):
            self._stop(verdict.message)
            return verdict.message
        return None

    def _heed(self, verdict: Verdict) -> None:
        """A verdict at the model's side of the loop: a stop, or a question no human approves,
        stops the agent."""
        if not self._goes_on(verdict):
            self._stop(verdict.message)

    def _stop(self, message: str) -> None:
        """From now on every call is answered with ``message`` and the agent's next reply is
        its final answer."""
        self._final = message

    def _goes_on(self, verdict: Verdict) -> bool:
        """False for a stop, and for a question with no human to answer it (or a no)."""
        if verdict.action == "ask":
            return self.ask is not None and bool(self.ask(verdict.message))
        return verdict.goes_on
