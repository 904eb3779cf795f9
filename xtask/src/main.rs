//! `cargo xtask <task>`: the project's own tasks, in plain Rust (serde_json alone, for the
//! audit benchmark's floor, `parse-floor`).
//!
//! - `ci`: what `.ci/run` runs: fmt check, clippy with warnings denied, rustdoc with warnings
//!   denied, and the tests.
//! - `deny`: cargo-deny's checks against deny.toml, offline with the shared advisory snapshot when
//!   the database cannot be fetched; installs cargo-deny if missing.
//! - `bench`: every crate's benchmarks, then one table of median figures against their targets;
//!   `bench audit`: the audit against a one-rule Python script and against reading and parsing
//!   the same files ([`mod@bench`]); `bench hook`: the hook command, a process per event;
//!   `bench bindings`: a guarded tool call in Rust, through Python and through Node;
//!   `bench gateway-peers`: the gateway beside nginx and the LiteLLM proxy, one fake upstream,
//!   the same loads ([`mod@gateway_peers`]), measuring the binary the packages ship.
//! - `pgo`: `looprail` optimised with a profile of the gateway at work (PGO, then BOLT where the
//!   machine has it), the binary `dist` packs and `bench gateway-peers` measures ([`mod@pgo`],
//!   [`mod@bolt`]).
//! - `release [--execute] [--tag] [--publish] [--skip-packages]`: plans a release of the crates
//!   changed since their last tag, builds and checks the published packages (`dist
//!   --all-targets --pgo --check`) and lists them; a dry run unless told otherwise (see
//!   [`release`]).
//! - `dist [--target TRIPLE]... [--all-targets] [--check] [--pgo | --unoptimised | --quick]`: the
//!   `looprail` command and the guard in process (Python module, Node addon) as Python wheels, an
//!   sdist and npm packages for Linux x86_64 and aarch64, glibc and musl, for people without
//!   Rust; `--check` installs and runs them ([`mod@dist`]).
//! - `docs`: each crate's README.md from its `lib.rs` documentation, rustdoc with warnings
//!   denied, and every code block of the user guide compiled.
//! - `chaos`: the full multi-worker chaos test (200 runs on 20 lanes, 3 workers SIGKILLed at
//!   random, PostgreSQL); CI runs a shorter one.

mod bench;
mod bindings_speed;
mod bolt;
mod deny;
mod dist;
mod gateway_peers;
mod hook_http_speed;
mod hook_speed;
mod pgo;
mod readmes;

use std::process::{Command, ExitCode};

use bench::{audit_speed, bench};

fn cargo(args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
    eprintln!("$ cargo {}", args.join(" "));
    let mut command = cargo_command();
    command.args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    let status = command.status().map_err(|e| format!("cannot start cargo: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("`cargo {}` failed ({status})", args.join(" "))) }
}

fn ci() -> Result<(), String> {
    cargo(&["fmt", "--all", "--", "--check"], &[])?;
    cargo(&["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"], &[])?;
    cargo(&["doc", "--workspace", "--no-deps"], &[("RUSTDOCFLAGS", "-D warnings")])?;
    deny::deny()?;
    cargo(&["test", "--workspace"], &[])
}

/// The cargo running this task (`$CARGO`), else the one on PATH.
pub(crate) fn cargo_bin() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

/// The files (not the folders) of `from` copied into `to`, which is made if missing.
pub(crate) fn copy_files(from: &std::path::Path, to: &std::path::Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for entry in std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_file() {
            let name = path.file_name().unwrap_or_default();
            std::fs::copy(&path, to.join(name)).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    Ok(())
}

/// A cargo command without the variables `cargo run` set for this task's own package
/// (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, ...): build scripts that watch one of them (ring's
/// watches `CARGO_MANIFEST_DIR`) would otherwise see it change and rebuild, with everything
/// above them, what the same command run from a shell had just built.
pub(crate) fn cargo_command() -> Command {
    let mut command = Command::new(cargo_bin());
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("CARGO_PKG_")
            || key.starts_with("CARGO_MANIFEST_")
            || ["CARGO_CRATE_NAME", "CARGO_BIN_NAME", "CARGO_PRIMARY_PACKAGE"].contains(&key.as_ref())
        {
            command.env_remove(key.as_ref());
        }
    }
    command
}

/// The crates in dependency order (each after everything it depends on), with their folders.
const CRATES: &[(&str, &str)] = &[
    ("looprail-loop-core", "crates/loop-core"),
    ("looprail-workdir", "crates/workdir"),
    ("looprail-telemetry", "crates/telemetry"),
    ("looprail-guardrails", "crates/guardrails"),
    ("looprail-compaction", "crates/compaction"),
    ("looprail-rag-dedup", "crates/rag-dedup"),
    ("looprail-providers", "crates/providers"),
    ("looprail-retry", "crates/retry"),
    ("looprail-journal", "crates/journal"),
    ("looprail-gateway", "crates/gateway"),
    ("looprail", "crates/looprail"),
    ("looprail-audit", "crates/audit"),
    ("looprail-embed", "crates/embed"),
    ("looprail-hook", "crates/hook"),
    ("looprail-cli", "crates/cli"),
];

fn git(args: &[&str]) -> Result<String, String> {
    let out = Command::new("git").args(args).output().map_err(|e| format!("git: {e}"))?;
    if !out.status.success() {
        return Err(format!("git {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The bump a set of commit subjects calls for, by the documented rule (cargo-semver-checks is
/// not installed here): a subject with `BREAKING` or a `!:` marker breaks the API (minor before
/// 1.0, major after), one that adds (`add`, `new`, `feat`) is a minor, anything else a patch.
fn bump_for(subjects: &[String], version: (u64, u64, u64)) -> (u64, u64, u64) {
    let breaking = subjects.iter().any(|s| s.contains("BREAKING") || s.contains("!:"));
    let adds = subjects.iter().any(|s| {
        let lower = s.to_lowercase();
        lower.starts_with("add")
            || lower.starts_with("new")
            || lower.starts_with("feat")
            || lower.contains(": add")
    });
    let (major, minor, patch) = version;
    match (breaking, adds, major) {
        (true, _, 0) | (false, true, _) => (major, minor + 1, 0),
        (true, _, _) => (major + 1, 0, 0),
        _ => (major, minor, patch + 1),
    }
}

fn workspace_version() -> Result<(u64, u64, u64), String> {
    let manifest = std::fs::read_to_string("Cargo.toml").map_err(|e| e.to_string())?;
    let line = manifest
        .lines()
        .skip_while(|l| l.trim() != "[workspace.package]")
        .find(|l| l.trim_start().starts_with("version"))
        .ok_or("no version in [workspace.package]")?;
    let text = line.split('"').nth(1).ok_or("unquoted workspace version")?;
    let parts: Vec<u64> = text
        .split('.')
        .map(|p| p.parse().map_err(|_| format!("bad version `{text}`")))
        .collect::<Result<_, _>>()?;
    match parts[..] {
        [a, b, c] => Ok((a, b, c)),
        _ => Err(format!("bad version `{text}`")),
    }
}

/// `cargo xtask release`: for each crate changed since its last tag (`<crate>-v<version>`),
/// in dependency order, the commit subjects that touched it, the bump they call for, the
/// CHANGELOG entry, then `cargo publish --workspace --dry-run`. The crates share one workspace
/// version, so the release bumps it by the largest bump. With `--execute` the version (workspace
/// and path dependencies) and the CHANGELOG files are written; `--tag` creates the tags and
/// `--publish` publishes. Before listing (or publishing) the packages it builds and checks them
/// for every target, the host's profile-guided (`dist --all-targets --pgo --check`), unless
/// `--skip-packages`. Nothing is pushed.
fn release(flags: &[String]) -> Result<(), String> {
    let has = |flag: &str| flags.iter().any(|f| f == flag);
    let (execute, tag, publish) = (has("--execute"), has("--tag"), has("--publish"));
    let packages = !has("--skip-packages");
    let current = workspace_version()?;
    let mut next = current;
    let mut plan = Vec::new();
    for (name, folder) in CRATES {
        let last_tag = git(&["tag", "--list", &format!("{name}-v*"), "--sort=-v:refname"])?
            .lines()
            .next()
            .map(str::to_owned);
        let range = last_tag.as_ref().map_or_else(|| "HEAD".to_owned(), |t| format!("{t}..HEAD"));
        let subjects: Vec<String> =
            git(&["log", "--format=%s", &range, "--", folder])?.lines().map(str::to_owned).collect();
        if subjects.is_empty() {
            continue;
        }
        next = next.max(bump_for(&subjects, current));
        plan.push((name, folder, subjects));
    }
    if plan.is_empty() {
        println!("nothing changed since the last tags");
        return Ok(());
    }
    let version = format!("{}.{}.{}", next.0, next.1, next.2);
    let old = format!("{}.{}.{}", current.0, current.1, current.2);
    let mode = if execute { "executing" } else { "dry run" };
    println!("release {old} -> {version} ({mode})");
    for (name, folder, subjects) in &plan {
        println!("\n{name} ({} commits) -> tag {name}-v{version}", subjects.len());
        let entry: String = subjects.iter().map(|s| format!("- {s}\n")).collect();
        print!("{entry}");
        if execute {
            let path = format!("{folder}/CHANGELOG.md");
            let log = std::fs::read_to_string(&path).unwrap_or_else(|_| format!("# Changelog of {name}\n"));
            let (head, rest) = log.split_once('\n').unwrap_or((&log, ""));
            std::fs::write(&path, format!("{head}\n\n## {version}\n\n{entry}{rest}"))
                .map_err(|e| e.to_string())?;
        }
    }
    if execute {
        let manifest = std::fs::read_to_string("Cargo.toml").map_err(|e| e.to_string())?;
        let bumped = manifest
            .replace(&format!("version = \"{old}\"\nedition"), &format!("version = \"{version}\"\nedition"))
            .replace(&format!(", version = \"{old}\" }}"), &format!(", version = \"{version}\" }}"));
        std::fs::write("Cargo.toml", bumped).map_err(|e| e.to_string())?;
    }
    let mut publish_args = vec!["publish", "--workspace", "--allow-dirty"];
    if !publish {
        publish_args.push("--dry-run");
    }
    cargo(&publish_args, &[])?;
    if packages {
        // The packages carry the workspace's version as the manifest has it now.
        let flags = ["--all-targets", "--pgo", "--check"].map(str::to_owned);
        dist::dist(&flags)?;
        dist::publish_packages(&dist::version()?, publish)?;
    }
    if tag {
        for (name, _, _) in &plan {
            git(&["tag", &format!("{name}-v{version}")])?;
        }
    } else {
        println!(
            "\ntags to create (with --tag): {}",
            plan.iter().map(|(n, _, _)| format!("{n}-v{version}")).collect::<Vec<_>>().join(" ")
        );
    }
    Ok(())
}

/// `cargo xtask docs`: each library crate's README.md written from its `lib.rs` documentation
/// ([`readmes`]), rustdoc with warnings denied, then every code block of the README and of docs/
/// compiled and run (they are doc-tests of the tests crate).
fn docs() -> Result<(), String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for path in readmes::write_all(&root)? {
        println!("wrote {path}");
    }
    // The command reference, from the binary's own --help (crates/cli/tests/cli_reference.rs).
    cargo(
        &["test", "-q", "-p", "looprail-cli", "--test", "cli", "cli_reference::"],
        &[("SNAPSHOTS", "overwrite")],
    )?;
    println!("wrote docs/reference/cli.md");
    // The config reference, from the defaults (crates/looprail/tests/config_reference.rs).
    cargo(&["test", "-q", "-p", "looprail", "--test", "config_reference"], &[("SNAPSHOTS", "overwrite")])?;
    println!("wrote docs/reference/config.md");
    cargo(&["doc", "--workspace", "--no-deps"], &[("RUSTDOCFLAGS", "-D warnings")])?;
    cargo(&["test", "-p", "looprail-tests", "--doc"], &[])?;
    println!("API docs: target/doc/looprail/index.html; user guide: docs/README.md");
    Ok(())
}

/// `cargo xtask chaos`: the chaos test of `crates/cli/tests/chaos.rs` at full size (each knob
/// may be overridden from the environment).
fn chaos() -> Result<(), String> {
    let knob = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.to_owned());
    let (runs, lanes, workers, kill) = (
        knob("LOOPRAIL_CHAOS_RUNS", "200"),
        knob("LOOPRAIL_CHAOS_LANES", "20"),
        knob("LOOPRAIL_CHAOS_WORKERS", "3"),
        knob("LOOPRAIL_CHAOS_KILL_MS", "3000"),
    );
    cargo(
        &["test", "--release", "-p", "looprail-cli", "--test", "cli", "chaos::", "--", "--nocapture"],
        &[
            ("LOOPRAIL_CHAOS_RUNS", &runs),
            ("LOOPRAIL_CHAOS_LANES", &lanes),
            ("LOOPRAIL_CHAOS_WORKERS", &workers),
            ("LOOPRAIL_CHAOS_KILL_MS", &kill),
        ],
    )
}

fn main() -> ExitCode {
    let task = std::env::args().nth(1);
    let result = match task.as_deref() {
        Some("ci") => ci(),
        Some("bench") if std::env::args().nth(2).as_deref() == Some("audit") => {
            audit_speed().and_then(|missed| {
                if missed == 0 {
                    Ok(())
                } else {
                    Err(format!("{missed} audit figure(s) missed their target"))
                }
            })
        }
        Some("bench") if std::env::args().nth(2).as_deref() == Some("bindings") => {
            bindings_speed::bindings_speed().and_then(|missed| {
                if missed == 0 { Ok(()) } else { Err(format!("{missed} binding figure(s) missed their target")) }
            })
        }
        Some("bench") if std::env::args().nth(2).as_deref() == Some("hook") => hook_speed::hook_speed()
            .and_then(|missed| if missed == 0 { Ok(()) } else { Err("the hook missed its target".into()) }),
        Some("bench") if std::env::args().nth(2).as_deref() == Some("gateway-peers") => {
            gateway_peers::gateway_peers().and_then(|missed| {
                if missed == 0 { Ok(()) } else { Err("the gateway missed a target beside its peers".into()) }
            })
        }
        Some("bench") => bench(),
        Some("deny") => deny::deny(),
        Some("release") => release(&std::env::args().skip(2).collect::<Vec<_>>()),
        Some("dist") => dist::dist(&std::env::args().skip(2).collect::<Vec<_>>()),
        Some("pgo") => pgo::llvm_profdata()
            .and_then(|tool| pgo::optimised_binary(&tool))
            .map(|(binary, _)| println!("{}", binary.display())),
        Some("docs") => docs(),
        Some("chaos") => chaos(),
        Some(other) => {
            Err(format!("unknown task `{other}`; tasks: ci, deny, bench, release, dist, pgo, docs, chaos"))
        }
        None => Err(
            "usage: cargo xtask <ci|deny|bench [audit|hook|bindings|gateway-peers]|release|dist [--target T]... [--all-targets] [--check] [--pgo | --unoptimised | --quick]|pgo|docs|chaos>"
                .to_owned(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{CRATES, bump_for};

    #[test]
    fn the_release_knows_every_published_crate() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates");
        for entry in std::fs::read_dir(root).unwrap() {
            let folder = entry.unwrap().path();
            let Ok(manifest) = std::fs::read_to_string(folder.join("Cargo.toml")) else { continue };
            if manifest.contains("publish = false") {
                continue;
            }
            let name = folder.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                CRATES.iter().any(|(_, f)| *f == format!("crates/{name}")),
                "crates/{name} is published but missing from CRATES"
            );
        }
    }

    #[test]
    fn the_bump_rule_reads_commit_subjects() {
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        assert_eq!(bump_for(&s(&["Fix a typo"]), (0, 1, 0)), (0, 1, 1));
        assert_eq!(bump_for(&s(&["Add the audit command"]), (0, 1, 0)), (0, 2, 0));
        assert_eq!(bump_for(&s(&["engine!: rename Action"]), (0, 1, 3)), (0, 2, 0));
        assert_eq!(bump_for(&s(&["BREAKING: new store schema"]), (1, 4, 2)), (2, 0, 0));
    }
}
