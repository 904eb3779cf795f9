"""LooprailCapability in a real pydantic-ai Agent (pinned version) on a fake model
(pydantic-ai's own FunctionModel): a model that repeats one call is nudged, denied and stopped
with a final answer; one that makes 100 distinct calls is left alone."""

import unittest

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage, UsageLimits

from looprail.pydantic_ai import LooprailCapability

RUNS: list[str] = []


def run_tests(path: str) -> str:
    """Runs the test suite under path."""
    RUNS.append(path)
    return "FAILED tests/test_app.py::test_login - AssertionError"


def fake_model(distinct: bool = False, limit: int = 1000) -> FunctionModel:
    """Calls `run_tests` while it has tools: on the same path (`distinct` False) or a new one
    each time, until `limit` calls; with no tools, answers in text."""

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        made = sum(1 for m in messages if isinstance(m, ModelResponse) for p in m.parts if isinstance(p, ToolCallPart))
        if not info.function_tools or made >= limit:
            return ModelResponse(parts=[TextPart("Final answer: the login test fails; I could not fix it.")])
        path = f"tests/test_{made}.py" if distinct else "tests/"
        return ModelResponse(
            parts=[ToolCallPart("run_tests", {"path": path}, tool_call_id=f"call_{made}")],
            usage=RequestUsage(input_tokens=100, output_tokens=10),
        )

    return FunctionModel(reply, model_name="fake")


def tool_results(messages: list[ModelMessage]) -> list[str]:
    return [str(p.content) for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]


def prompts(messages: list[ModelMessage]) -> list[str]:
    return [str(p.content) for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, UserPromptPart)]


class PydanticAiTest(unittest.TestCase):
    def setUp(self) -> None:
        RUNS.clear()

    def test_a_looping_agent_is_nudged_denied_and_stopped_with_a_final_answer(self) -> None:
        agent = Agent(fake_model(), tools=[run_tests], capabilities=[LooprailCapability()])
        result = agent.run_sync("make the tests pass")
        messages = result.all_messages()
        self.assertTrue(any(p.startswith("[looprail]") for p in prompts(messages)), "nudged")
        self.assertTrue(any(r.startswith("[looprail] Denied") for r in tool_results(messages)), "denied")
        self.assertIn("Final answer", result.output)
        self.assertLessEqual(len(RUNS), 16, f"the tool ran {len(RUNS)} times")

    def test_a_hundred_distinct_calls_are_left_alone(self) -> None:
        agent = Agent(fake_model(distinct=True, limit=100), tools=[run_tests], capabilities=[LooprailCapability()])
        # pydantic-ai's own limit (50 requests) would end this run first.
        result = agent.run_sync("run every test", usage_limits=UsageLimits(request_limit=200))
        messages = result.all_messages()
        self.assertEqual(len(RUNS), 100)
        self.assertFalse([r for r in tool_results(messages) if "[looprail]" in r])
        self.assertFalse([p for p in prompts(messages) if "[looprail]" in p])

    def test_each_run_is_a_new_stretch_of_its_conversation(self) -> None:
        # One conversation's capability, given per run, as an agent serving many would.
        capability = LooprailCapability()
        agent = Agent(fake_model(), tools=[run_tests])
        first = agent.run_sync("make the tests pass", capabilities=[capability])
        self.assertIn("Final answer", first.output)
        self.assertLessEqual(len(RUNS), 16, f"the tool ran {len(RUNS)} times")
        RUNS.clear()
        # The user's next message: the agent may call its tools again.
        second = agent.run_sync("try once more", message_history=first.all_messages(), capabilities=[capability])
        self.assertIn("Final answer", second.output)
        self.assertGreater(len(RUNS), 0, "the tool ran again in the new stretch")

    def test_an_approving_human_lets_the_agent_go_on(self) -> None:
        questions: list[str] = []

        def approve(question: str) -> bool:
            questions.append(question)
            return True

        agent = Agent(fake_model(limit=40), tools=[run_tests], capabilities=[LooprailCapability(ask=approve)])
        agent.run_sync("make the tests pass")
        self.assertTrue(questions, "the human was asked")
        self.assertTrue(questions[0].startswith("[looprail]"))


if __name__ == "__main__":
    unittest.main()
