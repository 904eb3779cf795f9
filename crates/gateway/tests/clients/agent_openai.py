"""A small tool-using agent on the official openai SDK, as users write them: it calls the
model, runs the tools it asks for, and stops when the model answers with text.

usage: agent_openai.py BASE_URL TASK MAX_STEPS [stream] [ask] [pause=K]
(pause=K: after K steps print PAUSED and wait for a line on stdin, so the gateway can be
restarted mid-conversation.)
Prints one JSON line: {"final": text or null, "steps": n, "run": the gateway's conversation id,
"runs": every id the gateway named}.
"""
import json
import sys

import openai

base_url, task, max_steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
stream = "stream" in sys.argv[4:]
ask = "ask" in sys.argv[4:]
pause = next((int(a[6:]) for a in sys.argv[4:] if a.startswith("pause=")), None)
client = openai.OpenAI(base_url=base_url, api_key="sk-client", max_retries=0)
tools = [{"type": "function", "function": {"name": "search", "description": "Search the files.",
          "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]
if ask:
    tools.append({"type": "function", "function": {"name": "ask_human", "description": "Ask the user.",
                  "parameters": {"type": "object", "properties": {"question": {"type": "string"}}}}})
messages = [{"role": "system", "content": "You search files."}, {"role": "user", "content": task}]
run = None
runs = []
for step in range(1, max_steps + 1):
    if stream:
        content, calls = "", {}
        raw = client.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", messages=messages, tools=tools, stream=True)
        run = raw.headers.get("x-looprail-run")
        for chunk in raw.parse():
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            content += delta.content or ""
            for call in delta.tool_calls or []:
                slot = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                slot["id"] = call.id or slot["id"]
                if call.function:
                    slot["name"] += call.function.name or ""
                    slot["arguments"] += call.function.arguments or ""
        tool_calls = [{"id": c["id"], "type": "function",
                       "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls.values()]
        message = {"role": "assistant", "content": content or None}
        if tool_calls:
            message["tool_calls"] = tool_calls
    else:
        raw = client.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", messages=messages, tools=tools)
        run = raw.headers.get("x-looprail-run")
        message = raw.parse().choices[0].message.model_dump(exclude_none=True)
        tool_calls = message.get("tool_calls") or []
    runs.append(run)
    messages.append(message)
    if not tool_calls:
        print(json.dumps({"final": message.get("content"), "steps": step, "run": run, "runs": sorted(set(r for r in runs if r))}))
        sys.exit(0)
    if step == pause:
        print("PAUSED", flush=True)
        sys.stdin.readline()
    for call in tool_calls:
        name = call["function"]["name"]
        result = "the user says: use the 2025 folder" if name == "ask_human" else "no results"
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
print(json.dumps({"final": None, "steps": max_steps, "run": run, "runs": sorted(set(r for r in runs if r))}))
sys.exit(1)
