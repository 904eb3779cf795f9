"""Type stubs of looprail's native module (the Rust guard, through PyO3)."""

import os
from typing import Any, Literal, Mapping, Sequence, TypedDict, final

Action = Literal["allow", "nudge", "deny", "ask", "stop"]

class Usage(TypedDict, total=False):
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int

class CallDict(TypedDict):
    id: str
    name: str
    arguments: str | Mapping[str, Any]

class GuardEvent(TypedDict):
    call_index: int
    event: str
    detector: str
    level: str
    tool: str
    tier: str
    evidence: list[int]

@final
class Verdict:
    """What the host does next."""

    @property
    def action(self) -> Action:
        """``allow``, ``nudge``, ``deny``, ``ask`` or ``stop``."""
    @property
    def message(self) -> str:
        """The nudge, the denial, the question, or the final-answer instruction."""
    @property
    def reason(self) -> str:
        """Why, for ``ask`` and ``stop`` (``loop_detected:...``, ``limit:...``, ``ask_human``)."""
    @property
    def goes_on(self) -> bool:
        """True unless the agent must stop."""

@final
class Guard:
    """One agent's guard: loop detection with its escalation ladder, budgets, time limits."""

    def __init__(
        self,
        profile: Literal["coding-agent", "task"] | None = None,
        config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    ) -> None: ...
    @staticmethod
    def restore(
        saved: str,
        profile: Literal["coding-agent", "task"] | None = None,
        config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    ) -> Guard:
        """A guard that goes on from what ``save()`` returned."""
    def save(self) -> str:
        """The guard's state as JSON text."""
    def user_message(self, now_ms: int | None = None) -> None:
        """A message from the user: a new stretch, with its own budgets and a fresh ladder."""
    def before_model(self, now_ms: int | None = None) -> Verdict:
        """Before each model call: budgets, time limits, the iteration cap."""
    def stream_text(self, delta: str) -> bool:
        """A piece of streamed text; True when the reply repeats itself and should be cut."""
    def model_response(
        self,
        text: str | None = None,
        calls: Sequence[CallDict] | None = None,
        usage: Usage | None = None,
        model: str = "",
        now_ms: int | None = None,
    ) -> Verdict:
        """The model's reply: its text, its tool calls, its usage and model."""
    def before_tool(self, id: str, name: str, arguments: str | Mapping[str, Any]) -> Verdict:
        """Before a call of the last reply runs."""
    def after_tool(self, id: str, output: str, failed: bool = False) -> Verdict:
        """A call's result (for a denied call, the denial the model read)."""
    def take_events(self) -> list[GuardEvent]:
        """The guard events since the last call, as ``looprail audit`` reports them."""
    def spent(self) -> tuple[int, int, float]:
        """``(input_tokens, output_tokens, cost)`` counted so far."""
