"""A LangGraph ReAct agent (`langgraph.prebuilt.create_react_agent`) on LangChain's ChatOpenAI,
as users write them: the graph calls the model, runs the tool it asks for, and ends when the
model answers with text (or when the graph's recursion limit, set from MAX_STEPS, is reached).

usage: agent_langgraph.py BASE_URL TASK MAX_STEPS [stream] [responses]
(responses: ChatOpenAI on the Responses API instead of Chat Completions.)
Prints one JSON line: {"final": text or null, "steps": model turns, "run": the gateway's
conversation id, "runs": every id the gateway named}.
"""
import json
import sys

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.errors import GraphRecursionError
from langgraph.prebuilt import create_react_agent
from openai import DefaultHttpxClient

base_url, task, max_steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
stream = "stream" in sys.argv[4:]
responses = "responses" in sys.argv[4:]
runs = []


def watch(response):
    run = response.headers.get("x-looprail-run")
    if run:
        runs.append(run)


@tool
def search(q: str) -> str:
    """Search the files."""
    return "no results"


model = ChatOpenAI(
    model="gpt-4o-mini",
    base_url=base_url,
    api_key="sk-client",
    max_retries=0,
    streaming=stream,
    use_responses_api=responses,
    # The SDK's own HTTP client (whichever library it is built on), watching each response.
    http_client=DefaultHttpxClient(event_hooks={"response": [watch]}),
)
agent = create_react_agent(model, [search], prompt="You search files.")
try:
    # Each model turn and each tool run is a step of the graph.
    state = agent.invoke({"messages": [("user", task)]}, {"recursion_limit": 2 * max_steps + 1})
except GraphRecursionError:
    print(json.dumps({"final": None, "steps": max_steps, "run": runs[-1] if runs else None,
                      "runs": sorted(set(runs))}))
    sys.exit(1)
turns = [m for m in state["messages"] if isinstance(m, AIMessage)]
text = turns[-1].text  # a property in langchain-core 1.x, a method before
final = str(text) if isinstance(text, str) else text()
print(json.dumps({"final": final, "steps": len(turns), "run": runs[-1] if runs else None,
                  "runs": sorted(set(runs))}))
