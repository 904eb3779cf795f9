"""The same agent on the official openai SDK's Responses API (`client.responses`), as Codex and
the OpenAI Agents SDK call it: the whole conversation goes each turn (store=False), the reply's
output items are appended to it, and each function call's output follows.

usage: agent_responses.py BASE_URL TASK MAX_STEPS [stream]
Prints one JSON line: {"final": text or null, "steps": n, "run": the gateway's conversation id,
"runs": every id the gateway named}.
"""
import json
import sys

import openai

base_url, task, max_steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
stream = "stream" in sys.argv[4:]
client = openai.OpenAI(base_url=base_url, api_key="sk-client", max_retries=0)
tools = [{"type": "function", "name": "search", "description": "Search the files.",
          "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}]
items = [{"role": "user", "content": task}]
run = None
runs = []
for step in range(1, max_steps + 1):
    raw = client.responses.with_raw_response.create(
        model="gpt-4o-mini", instructions="You search files.", input=items, tools=tools, store=False,
        stream=stream)
    run = raw.headers.get("x-looprail-run")
    if stream:
        final = None
        for event in raw.parse():
            if event.type == "response.completed":
                final = event.response
        if final is None:
            raise SystemExit("the stream ended without response.completed")
    else:
        final = raw.parse()
    runs.append(run)
    output = [item.model_dump(exclude_none=True) for item in final.output]
    items.extend(output)
    calls = [item for item in output if item["type"] == "function_call"]
    if not calls:
        print(json.dumps({"final": final.output_text, "steps": step, "run": run,
                          "runs": sorted(set(r for r in runs if r))}))
        sys.exit(0)
    for call in calls:
        items.append({"type": "function_call_output", "call_id": call["call_id"], "output": "no results"})
print(json.dumps({"final": None, "steps": max_steps, "run": run, "runs": sorted(set(r for r in runs if r))}))
sys.exit(1)
