#!/usr/bin/env node
// Runs the `looprail` binary of this platform's package (@looprail/cli-linux-<cpu>[-musl],
// installed by npm as an optional dependency: only the one matching this machine is fetched),
// passing the arguments, the standard streams, the exit code and a terminating signal through.
"use strict";
const { spawn } = require("node:child_process");
const path = require("node:path");

// On Linux the binary comes linked against glibc or, statically, against musl (Alpine and
// other slim images). The one for this machine's C library is tried first; the static musl
// build runs on a glibc system too, so it is the fallback there.
function candidates() {
  if (process.platform !== "linux") return [`${process.platform}-${process.arch}`];
  const report = typeof process.report?.getReport === "function" ? process.report.getReport() : null;
  const glibc = Boolean(report?.header?.glibcVersionRuntime);
  const base = `linux-${process.arch}`;
  return glibc ? [base, `${base}-musl`] : [`${base}-musl`];
}

const exe = process.platform === "win32" ? "looprail.exe" : "looprail";
let binary;
for (const platform of candidates()) {
  try {
    const manifest = require.resolve(`@looprail/cli-${platform}/package.json`);
    binary = path.join(path.dirname(manifest), "bin", exe);
    break;
  } catch {
    // not installed: try the next one
  }
}
if (!binary) {
  const wanted = candidates().map((p) => `@looprail/cli-${p}`).join(" or ");
  console.error(`looprail: no build for ${process.platform} ${process.arch} (${wanted} is not installed); ` +
    "packages exist for Linux x86_64 and aarch64, glibc and musl: install with optional dependencies on, " +
    "or build from source with `cargo install looprail-cli` (Rust 1.94 or newer)");
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
