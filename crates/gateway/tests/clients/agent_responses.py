"""The same agent on the official openai SDK's Responses API (`client.responses`), as Codex and
the OpenAI Agents SDK call it: the whole conversation goes each turn (store=False), the reply's
output items are appended to it, and each function call's output follows. With `chained`, as
the API's conversation-state guide does it: each turn sends only its new items and names the
response before (`previous_response_id`).

usage: agent_responses.py BASE_URL TASK MAX_STEPS [stream] [chained]
Prints one JSON line: {"final": text or null, "steps": n, "run": the gateway's conversation id,
"runs": every id the gateway named}.
"""
import json
import sys

import openai

base_url, task, max_steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
stream = "stream" in sys.argv[4:]
chained = "chained" in sys.argv[4:]
client = openai.OpenAI(base_url=base_url, api_key="sk-client", max_retries=0)
tools = [{"type": "function", "name": "search", "description": "Search the files.",
          "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}]
items = [{"role": "user", "content": task}]
new_items = list(items)
previous = None
run = None
runs = []
for step in range(1, max_steps + 1):
    if chained:
        extra = {"previous_response_id": previous} if previous else {}
        raw = client.responses.with_raw_response.create(
            model="gpt-4o-mini", instructions="You search files.", input=new_items, tools=tools,
            stream=stream, **extra)
    else:
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
    previous = final.id
    output = [item.model_dump(exclude_none=True) for item in final.output]
    items.extend(output)
    new_items = []
    calls = [item for item in output if item["type"] == "function_call"]
    if not calls:
        print(json.dumps({"final": final.output_text, "steps": step, "run": run,
                          "runs": sorted(set(r for r in runs if r))}))
        sys.exit(0)
    for call in calls:
        result = {"type": "function_call_output", "call_id": call["call_id"], "output": "no results"}
        items.append(result)
        new_items.append(result)
print(json.dumps({"final": None, "steps": max_steps, "run": run, "runs": sorted(set(r for r in runs if r))}))
sys.exit(1)
