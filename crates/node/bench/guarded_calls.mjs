// The guard's cost per guarded tool call through Node, for `cargo xtask bench bindings`: the
// same loop as crates/embed/examples/guarded_calls.rs. Prints the mean nanoseconds per call.
import { Guard } from 'looprail';

const n = Number(process.argv[2] ?? 100000);
let guard = new Guard();
const started = process.hrtime.bigint();
for (let i = 0; i < n; i++) {
  if (i % 1000 === 0) {
    guard = new Guard();
    guard.userMessage();
  }
  const id = `c${i}`;
  const args = `{"path":"src/m${i}.rs"}`;
  guard.beforeModel(i);
  guard.modelResponse({ calls: [{ id, name: 'read_file', arguments: args }] }, i);
  guard.beforeTool({ id, name: 'read_file', arguments: args });
  guard.afterTool(id, `contents of module ${i}`, false);
}
console.log(Math.round(Number(process.hrtime.bigint() - started) / n));
