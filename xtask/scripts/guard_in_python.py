"""The guard as `pip install looprail` gives it, with no Rust around: the module imports, a
failing call repeated by an agent is nudged, then denied, then stopped with a final-answer
instruction, and every framework adapter module imports. Exits non-zero, saying what failed."""

import importlib.util
import sys

from looprail import Guard

guard = Guard()
guard.user_message()
actions = []
for n in range(40):
    call = {"id": f"c{n}", "name": "bash", "arguments": {"cmd": "make"}}
    verdicts = [
        guard.before_model(now_ms=1000 * n),
        guard.model_response(calls=[call], now_ms=1000 * n),
        guard.before_tool(call["id"], "bash", call["arguments"]),
        guard.after_tool(call["id"], "make: *** No rule to make target", True),
    ]
    actions.extend(v.action for v in verdicts if v.action != "allow")
    if "stop" in actions:
        break
for wanted in ("nudge", "deny", "stop"):
    if wanted not in actions:
        sys.exit(f"the installed guard never said {wanted}: {actions}")
if not (actions.index("nudge") < actions.index("deny") < actions.index("stop")):
    sys.exit(f"the installed guard's ladder is out of order: {actions}")
# The adapters import their framework lazily where they can; only the module itself must load.
for adapter in ("langchain", "openai_agents", "pydantic_ai"):
    spec = importlib.util.find_spec(f"looprail.{adapter}")
    if spec is None:
        sys.exit(f"the wheel carries no looprail.{adapter}")
print(f"looprail module: nudge, deny, stop after {n + 1} calls")
