"""The guard's cost per guarded tool call through Python, for `cargo xtask bench bindings`: the
same loop as crates/embed/examples/guarded_calls.rs. Prints the mean nanoseconds per call."""

import sys
import time

from looprail import Guard

n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
guard = Guard()
started = time.perf_counter_ns()
for i in range(n):
    if i % 1000 == 0:
        guard = Guard()
        guard.user_message()
    call_id = f"c{i}"
    arguments = f'{{"path":"src/m{i}.rs"}}'
    guard.before_model(i)
    guard.model_response(calls=[{"id": call_id, "name": "read_file", "arguments": arguments}], now_ms=i)
    guard.before_tool(call_id, "read_file", arguments)
    guard.after_tool(call_id, f"contents of module {i}")
print(round((time.perf_counter_ns() - started) / n))
