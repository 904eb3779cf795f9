// A small tool-using agent on the official openai Node SDK (Chat Completions), as users write
// them: it calls the model, runs the tools it asks for, and stops when the model answers with
// text.
//
// usage: node agent_openai.mjs BASE_URL TASK MAX_STEPS [stream]
// Prints one JSON line: {"final": text or null, "steps": n, "run": the gateway's conversation
// id, "runs": every id the gateway named}.
import OpenAI from "openai";

const [baseURL, task, maxSteps, ...flags] = process.argv.slice(2);
const stream = flags.includes("stream");
const client = new OpenAI({ baseURL, apiKey: "sk-client", maxRetries: 0 });
const tools = [{
  type: "function",
  function: { name: "search", description: "Search the files.", parameters: { type: "object", properties: { q: { type: "string" } } } },
}];
const messages = [{ role: "system", content: "You search files." }, { role: "user", content: task }];
const runs = new Set();
let run = null;
for (let step = 1; step <= Number(maxSteps); step++) {
  let message;
  if (stream) {
    const { data, response } = await client.chat.completions
      .create({ model: "gpt-4o-mini", messages, tools, stream: true, stream_options: { include_usage: true } })
      .withResponse();
    run = response.headers.get("x-looprail-run");
    let content = "";
    const calls = new Map();
    for await (const chunk of data) {
      const choice = chunk.choices[0];
      if (!choice) continue;
      content += choice.delta.content ?? "";
      for (const call of choice.delta.tool_calls ?? []) {
        const slot = calls.get(call.index) ?? { id: "", name: "", arguments: "" };
        slot.id = call.id ?? slot.id;
        slot.name += call.function?.name ?? "";
        slot.arguments += call.function?.arguments ?? "";
        calls.set(call.index, slot);
      }
    }
    message = { role: "assistant", content: content || null };
    if (calls.size > 0) {
      message.tool_calls = [...calls.values()].map((c) => ({
        id: c.id, type: "function", function: { name: c.name, arguments: c.arguments },
      }));
    }
  } else {
    const { data, response } = await client.chat.completions
      .create({ model: "gpt-4o-mini", messages, tools })
      .withResponse();
    run = response.headers.get("x-looprail-run");
    message = data.choices[0].message;
  }
  if (run) runs.add(run);
  messages.push(message);
  const toolCalls = message.tool_calls ?? [];
  if (toolCalls.length === 0) {
    console.log(JSON.stringify({ final: message.content, steps: step, run, runs: [...runs].sort() }));
    process.exit(0);
  }
  for (const call of toolCalls) {
    messages.push({ role: "tool", tool_call_id: call.id, content: "no results" });
  }
}
console.log(JSON.stringify({ final: null, steps: Number(maxSteps), run, runs: [...runs].sort() }));
process.exit(1);
