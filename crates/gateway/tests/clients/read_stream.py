"""Reads ONE streamed reply through the gateway with the official SDKs' own stream readers and
prints what it got, as one JSON line: {"text": the reply's text, "end": how it ended}.

A reply the gateway cut for repeating itself (issue 35) must read like any reply an API cut at
its output limit: the SDK's accumulator takes every event, and no error is raised.

usage: read_stream.py chat|messages|responses BASE_URL
"""
import json
import sys

api, base_url = sys.argv[1], sys.argv[2]
prompt = "Quote the report."

if api == "chat":
    import openai
    from openai.lib.streaming.chat import ChatCompletionStreamState

    client = openai.OpenAI(base_url=base_url, api_key="sk-client", max_retries=0)
    # The SDK's accumulator (what its stream helper uses) checks that the chunks fit together.
    state = ChatCompletionStreamState()
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}], stream=True,
        stream_options={"include_usage": True})
    for chunk in stream:
        state.handle_chunk(chunk)
    choice = state.current_completion_snapshot.choices[0]
    text, end = choice.message.content or "", choice.finish_reason
elif api == "messages":
    import anthropic

    client = anthropic.Anthropic(base_url=base_url, api_key="sk-ant-client", max_retries=0)
    with client.messages.stream(model="claude-sonnet-4-5", max_tokens=4096,
                                messages=[{"role": "user", "content": prompt}]) as stream:
        for _ in stream.text_stream:
            pass
        message = stream.get_final_message()
    text = "".join(block.text for block in message.content if block.type == "text")
    end = message.stop_reason
elif api == "responses":
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="sk-client", max_retries=0)
    text, end = "", None
    # The stream helper accumulates the response from its events and refuses ones that do not
    # fit (a delta for an item never added); a response that ends incomplete has no final
    # `response.completed`, so its last event is read instead.
    with client.responses.stream(model="gpt-4o-mini", input=prompt) as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                text += event.delta
            elif event.type == "response.incomplete":
                end = event.response.incomplete_details.reason
            elif event.type == "response.completed":
                end = "completed"
else:
    sys.exit(f"unknown API {api}")

print(json.dumps({"text": text, "end": end}))
