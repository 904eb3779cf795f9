// looprail's Guard through Node (node --test): the ladder on a looping agent, no remark on a
// working one, the state carried across a process restart, bad input refused, a real Vercel AI
// SDK agent (generateText on a mock model), and the development runs against the audit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Guard } from 'looprail';
import { looping, step } from './steps.mjs';
import { guardAgent } from 'looprail/ai-sdk';
import { generateText, stepCountIs, tool } from 'ai';
import { MockLanguageModelV2 } from 'ai/test';
import { z } from 'zod';

test('a repeated failing call is nudged, then denied, then stopped', () => {
  const actions = looping(new Guard()).map((v) => v.action);
  assert.ok(actions.indexOf('nudge') >= 0 && actions.indexOf('nudge') < actions.indexOf('deny'));
  assert.ok(actions.indexOf('deny') < actions.indexOf('stop'));
  assert.equal(actions[actions.length - 1], 'stop');
});

test('a hundred distinct calls draw no remark', () => {
  const guard = new Guard();
  guard.userMessage();
  for (let n = 0; n < 100; n++) {
    for (const v of step(guard, n, 'read_file', { path: `src/m${n}.js` }, `contents ${n}`, false)) {
      assert.equal(v.action, 'allow');
    }
  }
  assert.deepEqual(guard.takeEvents(), []);
});

test('the state survives a process restart', () => {
  const whole = looping(new Guard()).map((v) => [v.action, v.message]);
  const guard = new Guard();
  guard.userMessage();
  const first = [];
  for (let n = 0; n < 3; n++) first.push(...step(guard, n, 'bash', { cmd: 'make' }, 'make: *** No rule to make target', true));
  const steps = new URL('./steps.mjs', import.meta.url).href;
  const child = `import { Guard } from 'looprail'; import { looping } from ${JSON.stringify(steps)};
    const out = looping(Guard.restore(process.argv[1]), 3);
    console.log(JSON.stringify(out.map((v) => [v.action, v.message])));`;
  const rest = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', child, guard.save()], { encoding: 'utf8' }));
  assert.deepEqual([...first.map((v) => [v.action, v.message]), ...rest], whole);
});

test('bad input is refused with one line and loses nothing', () => {
  assert.throws(() => new Guard({ profile: 'fast' }), /unknown profile/);
  assert.throws(() => Guard.restore('{}'), /not a saved looprail guard state/);
  assert.throws(() => new Guard({ config: { guardrails: { no_such_setting: 1 } } }), /config/);
  const guard = new Guard();
  assert.throws(() => guard.modelResponse({ calls: [{ id: 'c1' }] }));
  assert.throws(() => guard.modelResponse({ calls: [], usage: { inputTokens: -5 } }), /whole number of tokens/);
  assert.throws(() => guard.modelResponse({ calls: [], usage: { outputTokens: 1.5 } }), /whole number of tokens/);
  assert.throws(() => guard.modelResponse({ calls: [], text: 42 }));
  assert.equal(guard.beforeModel().action, 'allow');
  // A refused reply counted nothing: the guard still knows no tokens and no call.
  assert.deepEqual(guard.takeEvents(), []);
});

function looper({ distinct = false, limit = 1000 } = {}) {
  let made = 0;
  return new MockLanguageModelV2({
    doGenerate: async (options) => {
      const usage = { inputTokens: 100, outputTokens: 10, totalTokens: 110 };
      if (!options.tools || options.toolChoice?.type === 'none' || made >= limit) {
        return { content: [{ type: 'text', text: 'Final answer: the login test fails.' }], finishReason: 'stop', usage, warnings: [] };
      }
      const path = distinct ? `tests/test_${made}.js` : 'tests/';
      const call = { type: 'tool-call', toolCallId: `call_${made}`, toolName: 'runTests', input: JSON.stringify({ path }) };
      made += 1;
      return { content: [call], finishReason: 'tool-calls', usage, warnings: [] };
    },
  });
}

function runTests(runs) {
  return tool({
    description: 'Runs the test suite under path.',
    inputSchema: z.object({ path: z.string() }),
    execute: async ({ path }) => {
      runs.push(path);
      return 'FAILED tests/test_app.js: login - AssertionError';
    },
  });
}

test('a looping AI SDK agent is nudged, denied and stopped with a final answer', async () => {
  const runs = [];
  const agent = guardAgent();
  const result = await generateText({
    model: agent.model(looper()),
    tools: agent.tools({ runTests: runTests(runs) }),
    stopWhen: [stepCountIs(60), agent.stopWhen],
    prompt: 'make the tests pass',
  });
  const outputs = result.steps.flatMap((s) => s.toolResults.map((r) => String(r.output)));
  assert.ok(outputs.some((o) => o.includes('[looprail]') && !o.startsWith('[looprail]')), 'nudged');
  assert.ok(outputs.some((o) => o.startsWith('[looprail] Denied')), 'denied');
  assert.match(result.text, /Final answer/);
  assert.ok(runs.length <= 16, `the tool ran ${runs.length} times`);
});

test('an AI SDK agent making 100 distinct calls is left alone', async () => {
  const runs = [];
  const agent = guardAgent();
  const result = await generateText({
    model: agent.model(looper({ distinct: true, limit: 100 })),
    tools: agent.tools({ runTests: runTests(runs) }),
    stopWhen: [stepCountIs(150), agent.stopWhen],
    prompt: 'run every test',
  });
  assert.equal(runs.length, 100);
  const outputs = result.steps.flatMap((s) => s.toolResults.map((r) => String(r.output)));
  assert.deepEqual(outputs.filter((o) => o.includes('[looprail]')), []);
});

test('every development run gives the audit\'s events and stop', { skip: !process.env.LOOPRAIL_CONFORMANCE }, () => {
  const lines = readFileSync(process.env.LOOPRAIL_CONFORMANCE, 'utf8').split('\n').filter(Boolean);
  for (const line of lines) {
    const c = JSON.parse(line);
    const guard = new Guard();
    let stop = null;
    for (const s of c.steps) {
      let v;
      if (s.step === 'user') {
        guard.userMessage();
        continue;
      } else if (s.step === 'model') {
        v = guard.beforeModel(s.at_ms);
        if (v.action !== 'stop' && v.action !== 'ask') {
          const u = s.usage;
          v = guard.modelResponse({
            text: s.text ?? undefined,
            calls: s.calls,
            usage: { inputTokens: u.input_tokens, outputTokens: u.output_tokens, cacheReadTokens: u.cache_read_tokens, cacheWriteTokens: u.cache_write_tokens },
            model: s.model,
          }, s.at_ms);
        }
      } else {
        v = guard.afterTool(s.id, s.output, s.failed);
      }
      if (v.action === 'stop' || v.action === 'ask') {
        stop = v.reason;
        break;
      }
    }
    const events = guard.takeEvents().map((e) => ({
      call_index: e.callIndex, event: e.event, detector: e.detector, level: e.level, tool: e.tool, tier: e.tier, evidence: e.evidence,
    }));
    assert.deepEqual(events, c.events, c.name);
    assert.equal(stop, c.stop, c.name);
  }
  assert.ok(lines.length >= 800);
});
