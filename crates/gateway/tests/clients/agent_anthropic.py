"""The same agent on the official anthropic SDK.

usage: agent_anthropic.py BASE_URL TASK MAX_STEPS [stream]
Prints one JSON line: {"final": text or null, "steps": n, "run": the gateway's conversation id,
"runs": every id the gateway named}.
"""
import json
import sys

import anthropic

base_url, task, max_steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
stream = "stream" in sys.argv[4:]
client = anthropic.Anthropic(base_url=base_url, api_key="sk-ant-client", max_retries=0)
tools = [{"name": "search", "description": "Search the files.",
          "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}}]
messages = [{"role": "user", "content": task}]
run = None
runs = []
for step in range(1, max_steps + 1):
    if stream:
        with client.messages.stream(model="claude-sonnet-4-5", max_tokens=512, system="You search files.",
                                    messages=messages, tools=tools) as events:
            run = events.response.headers.get("x-looprail-run")
            final = events.get_final_message()
    else:
        raw = client.messages.with_raw_response.create(model="claude-sonnet-4-5", max_tokens=512,
                                                       system="You search files.", messages=messages, tools=tools)
        run = raw.headers.get("x-looprail-run")
        final = raw.parse()
    runs.append(run)
    content = [block.model_dump(exclude_none=True) for block in final.content]
    messages.append({"role": "assistant", "content": content})
    uses = [b for b in content if b["type"] == "tool_use"]
    if not uses:
        text = "".join(b.get("text", "") for b in content if b["type"] == "text")
        print(json.dumps({"final": text, "steps": step, "run": run, "runs": sorted(set(r for r in runs if r))}))
        sys.exit(0)
    messages.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": b["id"], "content": "no results"} for b in uses]})
print(json.dumps({"final": None, "steps": max_steps, "run": run, "runs": sorted(set(r for r in runs if r))}))
sys.exit(1)
