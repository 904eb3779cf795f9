"""LooprailMiddleware in a real LangChain agent (create_agent, pinned versions) on a fake model:
a model that repeats one call is nudged, denied and stopped with a final answer; one that makes
100 distinct calls is left alone."""

import unittest
from typing import Any, Sequence

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

from looprail.langchain import LooprailMiddleware

RUNS: list[str] = []


@tool
def run_tests(path: str) -> str:
    """Runs the test suite under path."""
    RUNS.append(path)
    return "FAILED tests/test_app.py::test_login - AssertionError"


class FakeModel(BaseChatModel):
    """Calls `run_tests` while it has tools: on the same path (`distinct` False) or a new one each
    time, until `limit` calls; with no tools, answers in text."""

    distinct: bool = False
    limit: int = 1000
    bound: bool = False
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "fake"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self.model_copy(update={"bound": bool(tools)})

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        made = sum(len(m.tool_calls) for m in messages if isinstance(m, AIMessage))
        if not self.bound or made >= self.limit:
            message = AIMessage(content="Final answer: the login test fails; I could not fix it.")
        else:
            path = f"tests/test_{made}.py" if self.distinct else "tests/"
            message = AIMessage(
                content="",
                tool_calls=[{"id": f"call_{made}", "name": "run_tests", "args": {"path": path}}],
                usage_metadata={"input_tokens": 100, "output_tokens": 10, "total_tokens": 110},
            )
        return ChatResult(generations=[ChatGeneration(message=message)])


class LangChainTest(unittest.TestCase):
    def setUp(self) -> None:
        RUNS.clear()

    def test_a_looping_agent_is_nudged_denied_and_stopped_with_a_final_answer(self) -> None:
        agent = create_agent(FakeModel(), [run_tests], middleware=[LooprailMiddleware()])
        out = agent.invoke({"messages": [{"role": "user", "content": "make the tests pass"}]}, {"recursion_limit": 200})
        messages = out["messages"]
        results = [m for m in messages if isinstance(m, ToolMessage)]
        self.assertTrue(any("[looprail]" in str(m.content) and m.status != "error" for m in results), "nudged")
        self.assertTrue(any(str(m.content).startswith("[looprail] Denied") for m in results), "denied")
        self.assertIsInstance(messages[-1], AIMessage)
        self.assertFalse(messages[-1].tool_calls)
        self.assertIn("Final answer", str(messages[-1].content))
        self.assertLessEqual(len(RUNS), 16, f"the tool ran {len(RUNS)} times")

    def test_a_hundred_distinct_calls_are_left_alone(self) -> None:
        agent = create_agent(FakeModel(distinct=True, limit=100), [run_tests], middleware=[LooprailMiddleware()])
        out = agent.invoke({"messages": [{"role": "user", "content": "run every test"}]}, {"recursion_limit": 500})
        results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
        self.assertEqual(len(RUNS), 100)
        self.assertFalse([m for m in results if "[looprail]" in str(m.content)])

    def test_an_approving_human_lets_the_agent_go_on(self) -> None:
        questions: list[str] = []
        def approve(question: str) -> bool:
            questions.append(question)
            return True

        middleware = LooprailMiddleware(ask=approve)
        agent = create_agent(FakeModel(), [run_tests], middleware=[middleware])
        agent.invoke({"messages": [{"role": "user", "content": "make the tests pass"}]}, {"recursion_limit": 200})
        self.assertTrue(questions, "the human was asked")
        self.assertTrue(questions[0].startswith("[looprail]"))


if __name__ == "__main__":
    unittest.main()
