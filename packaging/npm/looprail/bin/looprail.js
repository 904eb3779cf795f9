#!/usr/bin/env node
// Runs the `looprail` binary of this platform's package (@looprail/cli-linux-<cpu>[-musl],
// installed by npm as an optional dependency: only the one matching this machine is fetched),
// passing the arguments, the standard streams, the exit code and a terminating signal through.
"use strict";
const { spawn } = require("node:child_process");
const path = require("node:path");

const platform = require("../platform.js");

const binary = platform.file(path.join("bin", process.platform === "win32" ? "looprail.exe" : "looprail"));
if (!binary) {
  console.error(`looprail: ${platform.missing()}`);
  process.exit(1);
}
// Started asynchronously so that a signal sent to this process (a process manager's SIGTERM,
// `kill`) is passed on to the binary: with the binary run synchronously, node would end on it
// and leave a running `looprail gateway` behind.
const child = spawn(binary, process.argv.slice(2), { stdio: "inherit" });
child.on("error", (error) => {
  console.error(`looprail: cannot start ${binary}: ${error.message}`);
  process.exit(1);
});
const forwarded = ["SIGINT", "SIGTERM", "SIGHUP"];
for (const signal of forwarded) {
  process.on(signal, () => child.kill(signal));
}
child.on("exit", (code, signal) => {
  if (signal) {
    // Ended by a signal: end the same way (the handler above must not catch it).
    for (const s of forwarded) process.removeAllListeners(s);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
