//! Profile-guided optimisation of the `looprail` binary the packages ship (`cargo xtask dist`)
//! and the gateway benchmark measures (`cargo xtask bench gateway-peers`).
//!
//! At one client the gateway's request path runs cold: its code and data left the caches
//! while the client and the upstream ran, so the same work costs three to four times its
//! CPU under load. Laying the code out by how often it runs (hot functions together, cold
//! branches apart) is what PGO does, and on the peers benchmark it took 0.02–0.13 ms off the
//! added time at one client and 3–20 % off the CPU per request (docs/gateway.md, "Beside
//! nginx and LiteLLM").
//!
//! Three steps, each in a target directory of its own under `target/pgo/` (flags that differ
//! would otherwise rebuild the usual `target/` every time):
//!
//! 1. `looprail` built instrumented (`-Cprofile-generate`), with the `dist` profile;
//! 2. trained: the peers benchmark's driver, built with the test profile (the load, not its
//!    speed, is what counts), runs it alone through a short version of every load (one client,
//!    1,000 requests/s, the highest rate; Chat Completions and Messages, streamed and not) with
//!    its *training* workload, not the one it measures: unnamed conversations of a three-tool
//!    coding agent (`LOOPRAIL_PEERS_TRAINING=1`), and stops it with SIGTERM, on which it writes
//!    its counts;
//! 3. the counts merged with `llvm-profdata` (rustup's `llvm-tools` component, added when
//!    missing) into `target/pgo/looprail-<hash of its content>.profdata`, which the optimised
//!    build then reads ([`rustflags`]).
//!
//! Code the training does not run (the Responses API, the passthrough routes, compaction) is
//! laid out as cold: it works the same, a little slower than without PGO. `cargo build
//! --release` and `cargo install` get no PGO.
//!
//! Where the machine has BOLT, the optimised build is then linked for it and rewritten by it
//! from a second training run ([`mod@crate::bolt`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::dist::{host, run};

/// The workspace's root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Where the three steps work.
pub fn dir() -> PathBuf {
    root().join("target/pgo")
}

/// The optimised build's target directory (the `dist` profile's binary is `dist/looprail` in it).
pub fn optimised_dir() -> PathBuf {
    dir().join("optimised")
}

/// `RUSTFLAGS` as the environment has them, with `extra` after.
fn with_rustflags(extra: &str) -> String {
    match std::env::var("RUSTFLAGS") {
        Ok(given) if !given.trim().is_empty() => format!("{given} {extra}"),
        _ => extra.to_owned(),
    }
}

/// The `RUSTFLAGS` of a build optimised with the profile at `profdata`.
pub fn rustflags(profdata: &Path) -> String {
    // Functions the training never ran are many (whole APIs); naming each is noise.
    with_rustflags(&format!(
        "-Cprofile-use={} -Cllvm-args=-pgo-warn-missing-function=false",
        profdata.display()
    ))
}

/// rustup's `llvm-profdata` for this toolchain (its LLVM must be rustc's), added when missing;
/// the error says why there is none (a machine that cannot reach rustup's server).
pub fn llvm_profdata() -> Result<PathBuf, String> {
    llvm_tool("llvm-profdata")
}

/// A tool of rustup's `llvm-tools` component for this toolchain (`llvm-profdata`,
/// `llvm-strip`), the component added when missing.
pub fn llvm_tool(name: &str) -> Result<PathBuf, String> {
    let out =
        Command::new("rustc").args(["--print", "sysroot"]).output().map_err(|e| format!("rustc: {e}"))?;
    let sysroot = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let tool = Path::new(&sysroot).join("lib/rustlib").join(host()?).join("bin").join(name);
    if !tool.exists() {
        run(Command::new("rustup").args(["component", "add", "llvm-tools"]))
            .map_err(|e| format!("{name} is missing and rustup could not add it: {e}"))?;
    }
    if tool.exists() { Ok(tool) } else { Err(format!("{} missing after adding llvm-tools", tool.display())) }
}

/// The peers benchmark's program built with the test profile; its path.
fn training_driver() -> Result<PathBuf, String> {
    eprintln!("$ cargo test -p looprail-gateway --bench peers --no-run");
    let out = crate::cargo_command()
        .current_dir(root())
        .args(["test", "-q", "-p", "looprail-gateway", "--bench", "peers", "--no-run"])
        .arg("--message-format=json")
        .output()
        .map_err(|e| format!("cannot build the training driver: {e}"))?;
    if !out.status.success() {
        return Err(format!("building the training driver failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["target"]["name"] == "peers")
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| "cargo named no executable for the peers benchmark".to_owned())
}

/// `looprail` built with the `dist` profile into `target_dir` with `env` (see [`build_env`]);
/// its path.
fn build_looprail(target_dir: &Path, env: Vec<(&'static str, String)>) -> Result<PathBuf, String> {
    run(crate::cargo_command()
        .current_dir(root())
        .args(["build", "-q", "--profile", "dist", "-p", "looprail-cli", "--bin", "looprail"])
        .env("CARGO_TARGET_DIR", target_dir)
        .envs(env))?;
    Ok(target_dir.join("dist/looprail"))
}

/// The environment of a build optimised with the profile at `profdata`: its `RUSTFLAGS`
/// ([`rustflags`]) and, when BOLT is to rewrite the binary after (`for_bolt`), the link's
/// relocations kept in it (BOLT moves whole functions only with them) and its symbols (the
/// `dist` profile strips them; BOLT finds functions by them, and [`crate::bolt`] strips after).
pub fn build_env(profdata: &Path, for_bolt: bool) -> Vec<(&'static str, String)> {
    let mut flags = rustflags(profdata);
    let mut env = Vec::new();
    if for_bolt {
        flags.push_str(" -Clink-arg=-Wl,--emit-relocs");
        env.push(("CARGO_PROFILE_DIST_STRIP", "false".to_owned()));
    }
    env.push(("RUSTFLAGS", flags));
    env
}

/// Runs the training load on `binary` (a build that counts what runs: PGO's instrumented one,
/// or BOLT's), with its output in `dir/training.log` and its report in `dir/training.json`:
/// the peers benchmark, built with the test profile (the load, not its speed, is what counts),
/// alone through a short version of every load (one client, 1,000 requests/s, the highest
/// rate; Chat Completions and Messages, streamed and not), each gateway stopped with SIGTERM,
/// on which it exits and writes its counts.
pub fn train(binary: &Path, dir: &Path) -> Result<(), String> {
    let driver = training_driver()?;
    let report = dir.join("training.json");
    let log_path = dir.join("training.log");
    let _ = std::fs::remove_file(&report);
    let log = std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let errors = log.try_clone().map_err(|e| e.to_string())?;
    let mut train = Command::new(&driver);
    train
        .current_dir(root().join("crates/gateway"))
        .arg("--bench")
        .env("LOOPRAIL_PEERS_LOOPRAIL", binary)
        .env("LOOPRAIL_PEERS_SYSTEMS", "looprail")
        .env("LOOPRAIL_PEERS_LOADS", "1,1000,max")
        .env("LOOPRAIL_PEERS_QUICK", "1")
        .env("LOOPRAIL_PEERS_FS_WAIT_S", "0")
        .env("LOOPRAIL_PEERS_OUT", &report)
        // Another workload than the one the benchmark measures (unnamed conversations of a
        // three-tool coding agent; see the peers bench's requests.rs).
        .env("LOOPRAIL_PEERS_TRAINING", "1")
        .env_remove("LOOPRAIL_PEERS_BASELINE")
        .stdout(log)
        .stderr(errors);
    // Its exit status says whether the targets were met, which a training run does not care
    // about; that it measured looprail is what matters.
    eprintln!("$ {train:?} > {}", log_path.display());
    train.status().map_err(|e| format!("cannot run the training driver: {e}"))?;
    let measured = std::fs::read_to_string(&report)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|doc| doc["rows"].as_array().cloned())
        .is_some_and(|rows| {
            rows.iter().any(|r| r["system"] == "looprail" && r["requests"].as_u64().unwrap_or(0) > 0)
        });
    if measured {
        Ok(())
    } else {
        let tail = crate::dist::log_tail(&log_path);
        Err(format!("the training run measured no looprail request ({}):\n{tail}", log_path.display()))
    }
}

/// Builds `looprail` instrumented, trains it and merges its counts with `profdata_tool`
/// ([`llvm_profdata`]); the profile's path.
pub fn profile(profdata_tool: &Path) -> Result<PathBuf, String> {
    let dir = dir();
    let counts = dir.join("counts");
    let generate = with_rustflags(&format!("-Cprofile-generate={}", counts.display()));
    let instrumented = build_looprail(&dir.join("instrumented"), vec![("RUSTFLAGS", generate)])?;
    // A profile trained on this very build is used again (the training is not repeated for
    // nothing, and the optimised build, named by the profile, stays built).
    let stamp = dir.join("trained-on");
    let built = stamp_of(&instrumented)?;
    if let Ok(text) = std::fs::read_to_string(&stamp)
        && let Some((on, profdata)) = text.split_once('\n')
        && on == built
        && Path::new(profdata).exists()
    {
        eprintln!("pgo: the profile of this build is {profdata}");
        return Ok(PathBuf::from(profdata));
    }
    // The build's own scripts were instrumented too and wrote counts: only the gateway's count.
    let raw = trained_counts(&instrumented, &dir, &counts, "profraw")?;
    let merged = dir.join("merged.profdata");
    run(Command::new(profdata_tool).arg("merge").arg("-o").arg(&merged).args(&raw))?;
    // Named by its content: cargo rebuilds when RUSTFLAGS change, not when a file they name
    // does, so a new profile must have a new name (and the same one keeps the build).
    let bytes = std::fs::read(&merged).map_err(|e| format!("{}: {e}", merged.display()))?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&bytes, &mut hasher);
    let profdata = dir.join(format!("looprail-{:016x}.profdata", std::hash::Hasher::finish(&hasher)));
    for old in std::fs::read_dir(&dir).map_err(|e| e.to_string())?.filter_map(Result::ok) {
        let name = old.file_name().to_string_lossy().into_owned();
        if name.starts_with("looprail-") && name.ends_with(".profdata") {
            let _ = std::fs::remove_file(old.path());
        }
    }
    std::fs::rename(&merged, &profdata).map_err(|e| format!("{}: {e}", profdata.display()))?;
    std::fs::write(&stamp, format!("{built}\n{}", profdata.display())).map_err(|e| e.to_string())?;
    Ok(profdata)
}

/// Empties `counts`, trains `binary` ([`train`], its log and report in `dir`) and returns the
/// files ending in `.ext` the instrumented gateways wrote to `counts`.
pub fn trained_counts(binary: &Path, dir: &Path, counts: &Path, ext: &str) -> Result<Vec<PathBuf>, String> {
    let _ = std::fs::remove_dir_all(counts);
    std::fs::create_dir_all(counts).map_err(|e| format!("{}: {e}", counts.display()))?;
    train(binary, dir)?;
    let raw: Vec<PathBuf> = std::fs::read_dir(counts)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    if raw.is_empty() {
        return Err(format!(
            "the instrumented gateway wrote no .{ext} counts to {} (was it stopped with SIGTERM?)",
            counts.display()
        ));
    }
    Ok(raw)
}

/// What tells one build of `binary` from another: its size and modification time.
pub fn stamp_of(binary: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(binary).map_err(|e| format!("{}: {e}", binary.display()))?;
    let modified = meta.modified().map_err(|e| e.to_string())?;
    let since = modified.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    Ok(format!("{} bytes, modified {}.{:09}", meta.len(), since.as_secs(), since.subsec_nanos()))
}

/// `looprail` with the `dist` profile, optimised with the profile of the current build
/// ([`profile`], counts merged with `profdata_tool`), then rewritten by BOLT when the machine
/// has it ([`crate::bolt::find_or_say`]; without it, the PGO build): its path,
/// and how it was built in words (`dist profile, PGO and BOLT`).
pub fn optimised_binary(profdata_tool: &Path) -> Result<(PathBuf, &'static str), String> {
    let bolt = crate::bolt::find_or_say();
    let profdata = profile(profdata_tool)?;
    let binary = build_looprail(&optimised_dir(), build_env(&profdata, bolt.is_some()))?;
    match &bolt {
        Some(bolt) => Ok((crate::bolt::optimise(bolt, &binary)?, "dist profile, PGO and BOLT")),
        None => Ok((binary, "dist profile, PGO")),
    }
}
