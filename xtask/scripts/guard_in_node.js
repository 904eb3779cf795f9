'use strict';
// The guard as `npm install looprail` gives it, with no Rust around: `require('looprail')` finds
// this machine's addon in its platform package, a failing call repeated by an agent is nudged,
// then denied, then stopped with a final-answer instruction, and the AI SDK adapter resolves.
// Exits non-zero, saying what failed.
const { Guard } = require('looprail');

const guard = new Guard();
guard.userMessage();
const actions = [];
for (let n = 0; n < 40; n++) {
  const call = { id: `c${n}`, name: 'bash', arguments: { cmd: 'make' } };
  const verdicts = [
    guard.beforeModel(1000 * n),
    guard.modelResponse({ calls: [call] }, 1000 * n),
    guard.beforeTool(call),
    guard.afterTool(call.id, 'make: *** No rule to make target', true),
  ];
  actions.push(...verdicts.map((v) => v.action).filter((a) => a !== 'allow'));
  if (actions.includes('stop')) break;
}
const at = (action) => actions.indexOf(action);
if (!(at('nudge') >= 0 && at('nudge') < at('deny') && at('deny') < at('stop'))) {
  console.error(`the installed guard's ladder is not nudge, deny, stop: ${actions.join(' ')}`);
  process.exit(1);
}
require.resolve('looprail/ai-sdk');
console.log(`looprail addon: nudge, deny, stop after ${actions.length} remarks`);
