'use strict';
// looprail's guard in the Vercel AI SDK (v5): a language-model middleware that checks the
// budgets before each model call and reads each reply, and tool wrappers that may deny a call
// (the model reads why) or add a nudge to its result. When the guard stops the agent, every
// further call is answered with the final-answer instruction and the next model call is made
// with that instruction and no tools, so the step loop ends with a final answer in text.
const { wrapLanguageModel } = require('ai');
const { Guard } = require('./index.js');

function text(content) {
  return typeof content === 'string' ? content : JSON.stringify(content);
}

function userMessages(prompt) {
  return (prompt || []).filter((m) => m.role === 'user').length;
}

/**
 * A guard for one agent, in the AI SDK's terms: `model(m)` wraps a language model, `tools(t)`
 * wraps a tool set, `stopWhen` ends the step loop once a final answer came after a stop.
 */
function guardAgent(options = {}) {
  const guard = options.guard || new Guard({ profile: options.profile, config: options.config });
  const ask = options.ask;
  let users = 0;
  let final = null;
  let answered = false;

  const goesOn = (verdict) => {
    if (verdict.action === 'ask') return Boolean(ask && ask(verdict.message));
    return verdict.action !== 'stop';
  };

  const prepare = (params) => {
    const seen = userMessages(params.prompt);
    if (seen > users) {
      users = seen;
      final = null;
      answered = false;
      guard.userMessage();
    }
    const verdict = guard.beforeModel();
    if (final === null && !goesOn(verdict)) final = verdict.message;
    if (final !== null) {
      // The guaranteed final answer: the instruction, and no tools to call.
      answered = true;
      const prompt = [...params.prompt, { role: 'user', content: [{ type: 'text', text: final }] }];
      return { ...params, prompt, tools: undefined, toolChoice: { type: 'none' } };
    }
    if (verdict.action === 'nudge') {
      return { ...params, prompt: [...params.prompt, { role: 'user', content: [{ type: 'text', text: verdict.message }] }] };
    }
    return params;
  };

  const report = (content, usage, modelId) => {
    const calls = [];
    let said = '';
    for (const part of content) {
      if (part.type === 'tool-call') calls.push({ id: part.toolCallId, name: part.toolName, arguments: part.input });
      else if (part.type === 'text') said += part.text;
    }
    const verdict = guard.modelResponse({
      text: said || undefined,
      calls,
      usage: usage ? { inputTokens: usage.inputTokens || 0, outputTokens: usage.outputTokens || 0 } : undefined,
      model: modelId || '',
    });
    if (final === null && !goesOn(verdict)) final = verdict.message;
  };

  const middleware = {
    middlewareVersion: 'v2',
    wrapGenerate: async ({ doGenerate, params, model }) => {
      const stopped = final !== null;
      const result = await doGenerate();
      if (!stopped && params.tools) report(result.content, result.usage, model.modelId);
      return result;
    },
    wrapStream: async ({ doStream, params, model }) => {
      const stopped = final !== null;
      const { stream, ...rest } = await doStream();
      const content = [];
      let usage;
      let cut = false;
      const watched = stream.pipeThrough(
        new TransformStream({
          transform(part, controller) {
            if (cut) return;
            if (part.type === 'text-delta') {
              content.push({ type: 'text', text: part.delta });
              if (guard.streamText(part.delta)) {
                // The reply repeats itself: it ends here.
                cut = true;
                controller.enqueue({ type: 'text-end', id: part.id });
                controller.enqueue({ type: 'finish', finishReason: 'stop', usage: usage || { inputTokens: undefined, outputTokens: undefined, totalTokens: undefined } });
                if (!stopped) report(content, usage, model.modelId);
                controller.terminate();
                return;
              }
            } else if (part.type === 'tool-call') {
              content.push(part);
            } else if (part.type === 'finish') {
              usage = part.usage;
            }
            controller.enqueue(part);
          },
          flush() {
            if (!cut && !stopped && params.tools) report(content, usage, model.modelId);
          },
        }),
      );
      return { stream: watched, ...rest };
    },
    transformParams: async ({ params }) => prepare(params),
  };

  const wrapTool = (name, tool) => {
    if (typeof tool.execute !== 'function') return tool;
    const execute = tool.execute;
    return {
      ...tool,
      execute: async (input, callOptions) => {
        const id = callOptions.toolCallId;
        if (final !== null) {
          guard.afterTool(id, final, true);
          return final;
        }
        const verdict = guard.beforeTool({ id, name, arguments: input });
        if (verdict.action === 'deny' || !goesOn(verdict)) {
          if (verdict.action !== 'deny') final = verdict.message;
          guard.afterTool(id, verdict.message, true);
          return verdict.message;
        }
        let output;
        try {
          output = await execute(input, callOptions);
        } catch (error) {
          const after = guard.afterTool(id, String(error && error.message ? error.message : error), true);
          if (!goesOn(after)) final = after.message;
          throw error;
        }
        const after = guard.afterTool(id, text(output), false);
        if (after.action === 'nudge' || !goesOn(after)) {
          if (after.action !== 'nudge') final = after.message;
          return typeof output === 'string' ? `${output}\n\n${after.message}` : { output, looprail: after.message };
        }
        return output;
      },
    };
  };

  return {
    guard,
    model: (model) => wrapLanguageModel({ model, middleware }),
    tools: (tools) => Object.fromEntries(Object.entries(tools).map(([name, tool]) => [name, wrapTool(name, tool)])),
    /** A stop condition: the final answer after a stop has come. */
    stopWhen: () => answered,
  };
}

module.exports = { guardAgent };
