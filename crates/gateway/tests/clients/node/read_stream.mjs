// Reads ONE streamed reply through the gateway with the official Node SDKs' stream helpers and
// prints what it got, as one JSON line: {"text": the reply's text, "end": how it ended}.
//
// A reply the gateway cut for repeating itself (issue 35) must read like any reply an API cut
// at its output limit: the helper accumulates every event into the final reply, no error.
//
// usage: node read_stream.mjs chat|messages|responses BASE_URL
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";

const [api, baseURL] = process.argv.slice(2);
const prompt = "Quote the report.";
let text = "";
let end = null;
if (api === "chat") {
  const client = new OpenAI({ baseURL, apiKey: "sk-client", maxRetries: 0 });
  const stream = client.chat.completions.stream({
    model: "gpt-4o-mini", messages: [{ role: "user", content: prompt }], stream_options: { include_usage: true },
  });
  const completion = await stream.finalChatCompletion();
  text = completion.choices[0].message.content ?? "";
  end = completion.choices[0].finish_reason;
} else if (api === "messages") {
  const client = new Anthropic({ baseURL, apiKey: "sk-ant-client", maxRetries: 0 });
  const message = await client.messages
    .stream({ model: "claude-sonnet-4-5", max_tokens: 4096, messages: [{ role: "user", content: prompt }] })
    .finalMessage();
  text = message.content.filter((b) => b.type === "text").map((b) => b.text).join("");
  end = message.stop_reason;
} else if (api === "responses") {
  const client = new OpenAI({ baseURL, apiKey: "sk-client", maxRetries: 0 });
  // The helper accumulates the response from its events and refuses ones that do not fit; a
  // response that ends incomplete has no `response.completed`, so its last event is read.
  const stream = client.responses.stream({ model: "gpt-4o-mini", input: prompt });
  for await (const event of stream) {
    if (event.type === "response.output_text.delta") text += event.delta;
    else if (event.type === "response.incomplete") end = event.response.incomplete_details.reason;
    else if (event.type === "response.completed") end = "completed";
  }
} else {
  console.error(`unknown API ${api}`);
  process.exit(2);
}
console.log(JSON.stringify({ text, end }));
