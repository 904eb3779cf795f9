// An agent on the Vercel AI SDK: `generateText` (or `streamText`) with a tool it runs itself
// for up to MAX_STEPS steps, on the OpenAI provider's default model API (Responses; with
// `store` on, its default, earlier output items are sent back as item references), on its
// Chat Completions model (`chat`), or on the Anthropic provider (`anthropic`).
//
// usage: node agent_ai_sdk.mjs BASE_URL TASK MAX_STEPS [stream] [chat|anthropic]
// Prints one JSON line: {"final": text, "steps": n, "run": the gateway's conversation id,
// "runs": every id the gateway named}.
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";

const [baseURL, task, maxSteps, ...flags] = process.argv.slice(2);
const stream = flags.includes("stream");
const runs = new Set();
let run = null;
// Every response's conversation id, read as the SDK's requests come back.
const watching = async (url, init) => {
  const response = await fetch(url, init);
  run = response.headers.get("x-looprail-run") ?? run;
  if (run) runs.add(run);
  return response;
};
let model;
if (flags.includes("anthropic")) {
  model = createAnthropic({ baseURL, apiKey: "sk-ant-client", fetch: watching })("claude-sonnet-4-5");
} else {
  const openai = createOpenAI({ baseURL, apiKey: "sk-client", fetch: watching });
  model = flags.includes("chat") ? openai.chat("gpt-4o-mini") : openai("gpt-4o-mini");
}
const settings = {
  model,
  system: "You search files.",
  prompt: task,
  tools: {
    search: tool({
      description: "Search the files.",
      inputSchema: z.object({ q: z.string() }),
      execute: async () => "no results",
    }),
  },
  stopWhen: stepCountIs(Number(maxSteps)),
  maxRetries: 0,
};
let final, steps;
if (stream) {
  const result = streamText({ ...settings, onError: ({ error }) => { throw error; } });
  final = await result.text;
  steps = (await result.steps).length;
} else {
  const result = await generateText(settings);
  final = result.text;
  steps = result.steps.length;
}
console.log(JSON.stringify({ final, steps, run, runs: [...runs].sort() }));
process.exit(final ? 0 : 1);
