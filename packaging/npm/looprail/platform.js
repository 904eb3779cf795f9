'use strict';
// Which of the platform packages (@looprail/cli-linux-<cpu>[-musl], installed by npm as optional
// dependencies: only the one matching this machine is fetched) holds this machine's files: the
// `looprail` binary (bin/looprail) and the in-process guard's addon (looprail.node).
const path = require('node:path');

// On Linux the files come built against glibc or against musl (Alpine and other slim images).
// The one for this machine's C library is tried first; on a glibc system the musl binary, which
// is static, runs too, so it is the fallback there (the addon is not: see `file` below).
function candidates() {
  if (process.platform !== 'linux') return [`${process.platform}-${process.arch}`];
  const report = typeof process.report?.getReport === 'function' ? process.report.getReport() : null;
  const glibc = Boolean(report?.header?.glibcVersionRuntime);
  const base = `linux-${process.arch}`;
  return glibc ? [base, `${base}-musl`] : [`${base}-musl`];
}

/** The path of `relative` in the first installed platform package that may serve this machine,
 * or undefined. With `sameLibc`, only the package built for this machine's C library. */
function file(relative, sameLibc = false) {
  const names = sameLibc ? candidates().slice(0, 1) : candidates();
  for (const platform of names) {
    try {
      const manifest = require.resolve(`@looprail/cli-${platform}/package.json`);
      return path.join(path.dirname(manifest), relative);
    } catch {
      // not installed: try the next one
    }
  }
  return undefined;
}

/** What to say when no platform package is installed. */
function missing() {
  const wanted = candidates().map((p) => `@looprail/cli-${p}`).join(' or ');
  return `no build for ${process.platform} ${process.arch} (${wanted} is not installed); packages exist ` +
    'for Linux x86_64 and aarch64, glibc and musl: install with optional dependencies on, or build the ' +
    'command from source with `cargo install looprail-cli` (Rust 1.94 or newer)';
}

module.exports = { candidates, file, missing };
