// A small tool-using agent on the official @anthropic-ai/sdk (Messages), as users write them:
// it calls the model, runs the tools it asks for, and stops when the model answers with text.
//
// usage: node agent_anthropic.mjs BASE_URL TASK MAX_STEPS [stream]
// Prints one JSON line: {"final": text or null, "steps": n, "run": the gateway's conversation
// id, "runs": every id the gateway named}.
import Anthropic from "@anthropic-ai/sdk";

const [baseURL, task, maxSteps, ...flags] = process.argv.slice(2);
const stream = flags.includes("stream");
const client = new Anthropic({ baseURL, apiKey: "sk-ant-client", maxRetries: 0 });
const tools = [{ name: "search", description: "Search the files.", input_schema: { type: "object", properties: { q: { type: "string" } } } }];
const messages = [{ role: "user", content: task }];
// Extended thinking on: each reply starts with signed thinking blocks, sent back as they came.
const params = () => ({
  model: "claude-sonnet-4-5", max_tokens: 4096, thinking: { type: "enabled", budget_tokens: 1024 },
  system: "You search files.", messages, tools,
});
const runs = new Set();
let run = null;
for (let step = 1; step <= Number(maxSteps); step++) {
  let message;
  if (stream) {
    // The SDK's stream helper gathers the events into the final message.
    const events = client.messages.stream(params());
    message = await events.finalMessage();
    // The helper keeps the HTTP response it read the events from.
    const { response } = await events.withResponse();
    run = response.headers.get("x-looprail-run");
  } else {
    const { data, response } = await client.messages.create(params()).withResponse();
    run = response.headers.get("x-looprail-run");
    message = data;
  }
  if (run) runs.add(run);
  messages.push({ role: "assistant", content: message.content });
  const uses = message.content.filter((block) => block.type === "tool_use");
  if (uses.length === 0) {
    const text = message.content.filter((b) => b.type === "text").map((b) => b.text).join("");
    console.log(JSON.stringify({ final: text, steps: step, run, runs: [...runs].sort() }));
    process.exit(0);
  }
  messages.push({
    role: "user",
    content: uses.map((use) => ({ type: "tool_result", tool_use_id: use.id, content: "no results" })),
  });
}
console.log(JSON.stringify({ final: null, steps: Number(maxSteps), run, runs: [...runs].sort() }));
process.exit(1);
