// The package's TypeScript declarations, used as a typed agent would use them: `tsc --strict`
// checks this file against index.d.ts and ai-sdk.d.ts (tests/tests/in_process_guard.rs). Each
// `@ts-expect-error` line is a misuse the declarations must refuse: it fails the check when
// they stop refusing it.
import { generateText, stepCountIs, tool } from 'ai';
import { MockLanguageModelV2 } from 'ai/test';
import { z } from 'zod';
import { Guard, type GuardEvent, type Verdict } from 'looprail';
import { guardAgent } from 'looprail/ai-sdk';

const guard = new Guard({ profile: 'coding-agent', config: { budget: { max_tool_calls: 40 } } });
guard.userMessage();
const before: Verdict = guard.beforeModel();
const reply: Verdict = guard.modelResponse({
  calls: [{ id: 'c1', name: 'bash', arguments: { cmd: 'make' } }],
  usage: { inputTokens: 1200, outputTokens: 40 },
  model: 'gpt-4o',
});
const check: Verdict = guard.beforeTool({ id: 'c1', name: 'bash', arguments: '{"cmd":"make"}' });
const result: Verdict = guard.afterTool('c1', 'make: *** No rule to make target', true);
const actions: Array<'allow' | 'nudge' | 'deny' | 'ask' | 'stop'> = [before, reply, check, result].map((v) => v.action);
const events: GuardEvent[] = guard.takeEvents();
const cut: boolean = guard.streamText('partial text');
const again: Guard = Guard.restore(guard.save(), { profile: 'coding-agent' });

// @ts-expect-error: a profile the guard does not have
new Guard({ profile: 'chat' });
// @ts-expect-error: a call needs its id
guard.beforeTool({ name: 'bash', arguments: {} });
// @ts-expect-error: a verdict's action is one of five words
const wrong: Verdict['action'] = 'retry';

const agent = guardAgent({ ask: (question: string) => question.length > 0 });
const tools = agent.tools({
  run_tests: tool({
    description: 'Runs the tests',
    inputSchema: z.object({ path: z.string() }),
    execute: async ({ path }) => `ran ${path}`,
  }),
});
// The wrapped tools keep their own types.
const runTests: typeof tools.run_tests = tools.run_tests;

export async function run(): Promise<string> {
  const { text } = await generateText({
    model: agent.model(new MockLanguageModelV2()),
    tools,
    stopWhen: [stepCountIs(50), agent.stopWhen],
    prompt: 'fix the failing test',
  });
  return text;
}

export { actions, events, cut, again, wrong, runTests };
