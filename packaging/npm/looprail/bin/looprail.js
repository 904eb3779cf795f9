#!/usr/bin/env node
// Runs the `looprail` binary of this platform's package (@looprail/cli-<os>-<cpu>, installed by
// npm as an optional dependency: only the one matching this machine is fetched), passing the
// arguments, the standard streams, the exit code and a terminating signal through.
"use strict";
const { spawnSync } = require("node:child_process");
const path = require("node:path");

const platform = `${process.platform}-${process.arch}`;
const pkg = `@looprail/cli-${platform}`;
const exe = process.platform === "win32" ? "looprail.exe" : "looprail";
let binary;
try {
  binary = path.join(path.dirname(require.resolve(`${pkg}/package.json`)), "bin", exe);
} catch {
  console.error(`looprail: no build for ${platform} (the package ${pkg} is not installed); ` +
    "install with optional dependencies on, or use `pip install looprail` or `cargo install looprail-cli`");
  process.exit(1);
}
const result = spawnSync(binary, process.argv.slice(2), { stdio: "inherit" });
if (result.error) {
  console.error(`looprail: cannot start ${binary}: ${result.error.message}`);
  process.exit(1);
}
if (result.signal) {
  process.kill(process.pid, result.signal);
}
process.exit(result.status ?? 1);
