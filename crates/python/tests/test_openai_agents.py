"""LooprailGuard in a real OpenAI Agents SDK run (Runner, pinned version) on a fake model: a
model that repeats one call is nudged, denied and stopped with a final answer; one that makes
100 distinct calls is left alone; the state carries to the next run."""

import asyncio
import json
import unittest
from typing import Any

from agents import Agent, ModelSettings, Runner, function_tool
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from looprail.openai_agents import LooprailGuard

RUNS: list[str] = []


@function_tool
def run_tests(path: str) -> str:
    """Runs the test suite under path."""
    RUNS.append(path)
    return "FAILED tests/test_app.py::test_login - AssertionError"


class FakeModel(Model):
    """Calls `run_tests` (the same path, or a new one each time) until `limit` calls, or until
    tool_choice is `none`; then answers in text."""

    def __init__(self, distinct: bool = False, limit: int = 1000) -> None:
        self.distinct = distinct
        self.limit = limit
        self.made = 0
        self.outputs: list[Any] = []

    async def get_response(self, system_instructions: Any, input: Any, model_settings: ModelSettings, tools: Any,
                           output_schema: Any, handoffs: Any, tracing: Any, **kwargs: Any) -> ModelResponse:
        usage = Usage(requests=1, input_tokens=100, output_tokens=10, total_tokens=110)
        if model_settings.tool_choice == "none" or self.made >= self.limit:
            text = ResponseOutputText(type="output_text", text="Final answer: the login test fails.", annotations=[])
            item: Any = ResponseOutputMessage(id="m", type="message", role="assistant", status="completed", content=[text])
        else:
            path = f"tests/test_{self.made}.py" if self.distinct else "tests/"
            item = ResponseFunctionToolCall(type="function_call", call_id=f"call_{self.made}", name="run_tests",
                                            arguments=json.dumps({"path": path}))
            self.made += 1
        self.outputs.append(item)
        return ModelResponse(output=[item], usage=usage, response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def agent(model: FakeModel) -> Agent[Any]:
    return Agent(name="fixer", instructions="Fix the tests.", model=model, tools=[run_tests])


class OpenAIAgentsTest(unittest.TestCase):
    def setUp(self) -> None:
        RUNS.clear()

    def test_a_looping_agent_is_nudged_denied_and_stopped_with_a_final_answer(self) -> None:
        guard = LooprailGuard()
        model = FakeModel()
        result = asyncio.run(Runner.run(guard.protect(agent(model)), "make the tests pass", hooks=guard.hooks, max_turns=60))
        self.assertIn("Final answer", str(result.final_output))
        outputs = [str(i.output) for i in result.new_items if getattr(i, "type", "") == "tool_call_output_item"]
        self.assertTrue(any("[looprail]" in o and not o.startswith("[looprail]") for o in outputs), "nudged")
        self.assertTrue(any(o.startswith("[looprail] Denied") for o in outputs), "denied")
        self.assertLessEqual(len(RUNS), 16, f"the tool ran {len(RUNS)} times")

    def test_a_hundred_distinct_calls_are_left_alone(self) -> None:
        guard = LooprailGuard()
        result = asyncio.run(Runner.run(guard.protect(agent(FakeModel(distinct=True, limit=100))), "run every test",
                                        hooks=guard.hooks, max_turns=150))
        outputs = [str(i.output) for i in result.new_items if getattr(i, "type", "") == "tool_call_output_item"]
        self.assertEqual(len(RUNS), 100)
        self.assertFalse([o for o in outputs if "[looprail]" in o])

    def test_the_next_run_is_a_new_stretch_with_tools_again(self) -> None:
        guard = LooprailGuard()
        looping = agent(FakeModel())
        asyncio.run(Runner.run(guard.protect(looping), "make the tests pass", hooks=guard.hooks, max_turns=60))
        self.assertIsNone(looping.model_settings.tool_choice, "tool_choice is set back after the run")
        RUNS.clear()
        fresh = FakeModel(distinct=True, limit=3)
        looping.model = fresh
        asyncio.run(Runner.run(looping, "now run three other tests", hooks=guard.hooks, max_turns=10))
        self.assertEqual(len(RUNS), 3, "a new run starts a new stretch: the tools run again")


if __name__ == "__main__":
    unittest.main()
