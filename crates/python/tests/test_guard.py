"""looprail.Guard through Python: the ladder on a looping agent, no remark on a working one, the
state carried across a process restart, and bad input refused with a ValueError."""

import json
import os
import subprocess
import sys
import unittest
from typing import Any

from looprail import Guard, Verdict


def step(guard: Guard, n: int, name: str, arguments: dict[str, Any], output: str, failed: bool = False) -> list[Verdict]:
    """One model turn with one call; the verdicts of each hook, in order."""
    call_id = f"c{n}"
    seen = [guard.before_model(now_ms=1000 * n)]
    seen.append(guard.model_response(calls=[{"id": call_id, "name": name, "arguments": arguments}], now_ms=1000 * n))
    seen.append(guard.before_tool(call_id, name, arguments))
    if seen[-1].action == "deny":
        seen.append(guard.after_tool(call_id, seen[-1].message, True))
    else:
        seen.append(guard.after_tool(call_id, output, failed))
    return seen


def looping(guard: Guard, turns: int = 40) -> list[Verdict]:
    verdicts = []
    guard.user_message()
    for n in range(turns):
        verdicts.extend(step(guard, n, "bash", {"cmd": "make"}, "make: *** No rule to make target", True))
        if not verdicts[-1].goes_on or any(not v.goes_on for v in verdicts[-4:]):
            break
    return verdicts


class GuardTest(unittest.TestCase):
    def test_a_repeated_failing_call_is_nudged_then_denied_then_stopped(self) -> None:
        verdicts = looping(Guard())
        actions = [v.action for v in verdicts]
        self.assertIn("nudge", actions)
        self.assertIn("deny", actions)
        self.assertEqual(actions[-1], "stop")
        self.assertLess(actions.index("nudge"), actions.index("deny"))
        self.assertLess(actions.index("deny"), actions.index("stop"))
        stop = verdicts[-1]
        self.assertTrue(stop.message.startswith("[looprail]"))
        self.assertIn("final answer", stop.message)
        self.assertTrue(stop.reason)
        self.assertLessEqual(len(verdicts) // 4, 16, "stopped within 16 calls")

    def test_a_hundred_distinct_calls_draw_no_remark(self) -> None:
        guard = Guard()
        guard.user_message()
        for n in range(100):
            for verdict in step(guard, n, "read_file", {"path": f"src/module_{n}.py"}, f"contents of module {n}"):
                self.assertEqual(verdict.action, "allow", verdict)
        self.assertEqual(guard.take_events(), [])

    def test_the_state_survives_a_process_restart(self) -> None:
        # One guard all along, and one saved halfway, restored in a new Python process that
        # makes the rest of the calls: the same verdicts.
        whole = looping(Guard())
        guard = Guard()
        guard.user_message()
        first = []
        for n in range(3):
            first.extend(step(guard, n, "bash", {"cmd": "make"}, "make: *** No rule to make target", True))
        child = (
            "import json, sys\n"
            "sys.path[:0] = json.loads(sys.argv[2])\n"
            "from looprail import Guard\n"
            "from test_guard import step\n"
            "guard = Guard.restore(sys.argv[1])\n"
            "out = []\n"
            "for n in range(3, 40):\n"
            "    out.extend(step(guard, n, 'bash', {'cmd': 'make'}, 'make: *** No rule to make target', True))\n"
            "    if any(not v.goes_on for v in out[-4:]): break\n"
            "print(json.dumps([[v.action, v.message] for v in out]))\n"
        )
        here = os.path.dirname(os.path.abspath(__file__))
        ran = subprocess.run(
            [sys.executable, "-c", child, guard.save(), json.dumps([here, *sys.path])],
            capture_output=True, text=True, check=True, cwd=here,
        )
        rest = json.loads(ran.stdout)
        self.assertEqual([[v.action, v.message] for v in first] + rest, [[v.action, v.message] for v in whole])

    def test_bad_input_is_refused_with_one_line(self) -> None:
        with self.assertRaisesRegex(ValueError, "unknown profile"):
            Guard(profile="fast")  # type: ignore[arg-type]
        with self.assertRaisesRegex(ValueError, "not a saved looprail guard state"):
            Guard.restore("{}")
        with self.assertRaisesRegex(ValueError, "config"):
            Guard(config={"guardrails": {"no_such_setting": 1}})
        guard = Guard()
        with self.assertRaisesRegex(ValueError, "`name` is missing"):
            guard.model_response(calls=[{"id": "c1"}])  # type: ignore[typeddict-item]
        with self.assertRaises(TypeError):
            guard.before_tool("c1", "bash", object())  # type: ignore[arg-type]
        # Nothing was lost: the guard goes on.
        self.assertEqual(guard.before_model().action, "allow")

    def test_a_budget_stops_before_the_model_call(self) -> None:
        guard = Guard(config={"loop": {"budget": {"token_budget": 1000}}})
        guard.user_message()
        self.assertEqual(guard.before_model().action, "allow")
        guard.model_response(text="thinking", usage={"input_tokens": 900, "output_tokens": 200})
        verdict = guard.before_model()
        self.assertEqual((verdict.action, verdict.reason), ("stop", "limit:token_budget"))
        self.assertEqual(guard.spent()[:2], (900, 200))

    def test_a_reply_repeating_itself_is_cut_as_it_streams(self) -> None:
        guard = Guard()
        guard.user_message()
        guard.before_model()
        block = "I will now check the configuration file again to be sure. "
        cut_at = None
        for n in range(200):
            if guard.stream_text(block):
                cut_at = n
                break
        assert cut_at is not None
        self.assertLess(cut_at, 60)
        self.assertIsInstance(guard.model_response(text=block * cut_at), Verdict)


if __name__ == "__main__":
    unittest.main()
