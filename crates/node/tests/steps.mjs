// The steps of a one-call agent, shared by the tests and the child process that restores a guard.

export function step(guard, n, name, args, output, failed) {
  const id = `c${n}`;
  const seen = [guard.beforeModel(1000 * n), guard.modelResponse({ calls: [{ id, name, arguments: args }] }, 1000 * n)];
  seen.push(guard.beforeTool({ id, name, arguments: args }));
  const last = seen[seen.length - 1];
  seen.push(last.action === 'deny' ? guard.afterTool(id, last.message, true) : guard.afterTool(id, output, failed));
  return seen;
}

export function looping(guard, from = 0, first = []) {
  const verdicts = [...first];
  if (from === 0) guard.userMessage();
  for (let n = from; n < 40; n++) {
    verdicts.push(...step(guard, n, 'bash', { cmd: 'make' }, 'make: *** No rule to make target', true));
    if (verdicts.slice(-4).some((v) => v.action === 'stop')) break;
  }
  return verdicts;
}

