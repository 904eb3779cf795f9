"""One semantics everywhere: the development trajectories, as the steps a host reports, through
looprail.Guard give the events and the stop `looprail audit` gives on the same runs. The cases
(steps and the audit's answer) are written by tests/tests/python_bindings.rs to the file named by
LOOPRAIL_CONFORMANCE."""

import json
import os
import unittest
from typing import TYPE_CHECKING, Any, Optional

from looprail import Guard

if TYPE_CHECKING:
    from looprail._native import GuardEvent


def drive(steps: list[dict[str, Any]]) -> "tuple[list[GuardEvent], Optional[str]]":
    guard = Guard()
    stop: Optional[str] = None
    for step in steps:
        kind = step["step"]
        if kind == "user":
            guard.user_message()
            continue
        if kind == "model":
            verdict = guard.before_model(now_ms=step["at_ms"])
            if verdict.action not in ("stop", "ask"):
                verdict = guard.model_response(
                    text=step["text"], calls=step["calls"], usage=step["usage"], model=step["model"], now_ms=step["at_ms"]
                )
        else:
            verdict = guard.after_tool(step["id"], step["output"], step["failed"])
        if verdict.action in ("stop", "ask"):
            stop = verdict.reason
            break
    return guard.take_events(), stop


class ConformanceTest(unittest.TestCase):
    def test_every_development_run_gives_the_audits_events_and_stop(self) -> None:
        path = os.environ.get("LOOPRAIL_CONFORMANCE")
        if not path:
            self.skipTest("LOOPRAIL_CONFORMANCE names no cases file")
        runs = 0
        with open(path, encoding="utf-8") as cases:
            for line in cases:
                case = json.loads(line)
                events, stop = drive(case["steps"])
                self.assertEqual(events, case["events"], case["name"])
                self.assertEqual(stop, case["stop"], case["name"])
                runs += 1
        self.assertGreaterEqual(runs, 800)


if __name__ == "__main__":
    unittest.main()
