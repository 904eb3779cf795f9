"""An agent on the OpenAI Agents SDK (`openai-agents`): an Agent with one function tool, run by
its Runner for up to MAX_STEPS model turns on the Responses API, as users write them. The
Runner sends the whole conversation each turn, its earlier output items with their ids.

usage: agent_agents_sdk.py BASE_URL TASK MAX_STEPS [stream]
Prints one JSON line: {"final": text or null, "steps": model calls, "run": the gateway's
conversation id, "runs": every id the gateway named}.
"""
import asyncio
import json
import sys

from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
from agents.exceptions import MaxTurnsExceeded
from openai import AsyncOpenAI, DefaultAsyncHttpxClient

base_url, task, max_steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
stream = "stream" in sys.argv[4:]
set_tracing_disabled(True)
runs = []


async def watch(response):
    run = response.headers.get("x-looprail-run")
    if run:
        runs.append(run)


@function_tool
def search(q: str) -> str:
    """Search the files."""
    return "no results"


async def main():
    # The SDK's own HTTP client (whichever library it is built on), watching each response.
    http = DefaultAsyncHttpxClient(event_hooks={"response": [watch]})
    client = AsyncOpenAI(base_url=base_url, api_key="sk-client", max_retries=0, http_client=http)
    model = OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client)
    agent = Agent(name="searcher", instructions="You search files.", tools=[search], model=model)
    try:
        if stream:
            result = Runner.run_streamed(agent, task, max_turns=max_steps)
            async for _ in result.stream_events():
                pass
        else:
            result = await Runner.run(agent, task, max_turns=max_steps)
    except MaxTurnsExceeded:
        print(json.dumps({"final": None, "steps": max_steps, "run": runs[-1] if runs else None,
                          "runs": sorted(set(runs))}))
        sys.exit(1)
    print(json.dumps({"final": result.final_output, "steps": len(result.raw_responses),
                      "run": runs[-1] if runs else None, "runs": sorted(set(runs))}))


asyncio.run(main())
