//! `cargo xtask bench gateway-peers` (issue 37): provides the programs the gateway-peers
//! benchmark measures, then runs it (`crates/gateway/benches/peers`): the `looprail` binary the
//! packages ship (`dist` profile, optimised with a profile of the gateway at work: `pgo`); nginx
//! from the system, installed with apt when missing and permitted (root or password-less sudo);
//! the LiteLLM proxy in a venv under `target/bench/litellm-venv`, made from
//! `xtask/peers/litellm-requirements.txt` (every package pinned) and made again when that file
//! changes. A peer that cannot be had is passed as a reason: its rows say why.

use std::path::{Path, PathBuf};
use std::process::Command;

fn succeeds(program: &str, args: &[&str]) -> bool {
    Command::new(program).args(args).output().is_ok_and(|o| o.status.success())
}

/// nginx's path (installing it when allowed) and version, or why there is none.
fn nginx() -> Result<(PathBuf, String), String> {
    let find = || {
        ["nginx", "/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"]
            .iter()
            .find(|p| succeeds(p, &["-v"]))
            .map(|p| (*p).to_owned())
    };
    let program = match find() {
        Some(program) => program,
        None => {
            let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
            let prefix: &[&str] = if root {
                &[]
            } else if succeeds("sudo", &["-n", "true"]) {
                &["sudo", "-n"]
            } else {
                return Err("nginx is not installed (and installing it needs root)".into());
            };
            eprintln!("== installing nginx with apt (the floor for any HTTP proxy)");
            let apt = |args: &[&str]| {
                let mut all: Vec<&str> = prefix.to_vec();
                all.extend_from_slice(args);
                Command::new(all[0])
                    .args(&all[1..])
                    .env("DEBIAN_FRONTEND", "noninteractive")
                    .status()
                    .is_ok_and(|s| s.success())
            };
            if !(apt(&["apt-get", "update", "-qq"])
                && apt(&["apt-get", "install", "-y", "-qq", "--no-install-recommends", "nginx"]))
            {
                return Err("nginx is not installed and apt-get could not install it".into());
            }
            find().ok_or("nginx was installed but does not run")?
        }
    };
    let out = Command::new(&program).arg("-v").output().map_err(|e| e.to_string())?;
    let version =
        String::from_utf8_lossy(&out.stderr).trim().trim_start_matches("nginx version: ").to_owned();
    // A path, so the benchmark can tell it exists.
    let path = if program.contains('/') {
        PathBuf::from(&program)
    } else {
        let which =
            Command::new("sh").args(["-c", "command -v nginx"]).output().map_err(|e| e.to_string())?;
        PathBuf::from(String::from_utf8_lossy(&which.stdout).trim())
    };
    Ok((path, version))
}

/// The venv's `litellm` and its version, making the venv when missing or out of date.
fn litellm(root: &Path) -> Result<(PathBuf, String), String> {
    let requirements_path = root.join("xtask/peers/litellm-requirements.txt");
    let requirements = std::fs::read_to_string(&requirements_path)
        .map_err(|e| format!("cannot read {}: {e}", requirements_path.display()))?;
    let version = requirements
        .lines()
        .find_map(|l| l.strip_prefix("litellm=="))
        .ok_or("litellm-requirements.txt pins no litellm")?
        .to_owned();
    let venv = root.join("target/bench/litellm-venv");
    let stamp = venv.join("looprail-requirements.txt");
    let program = venv.join("bin/litellm");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(requirements.as_str()) || !program.exists() {
        eprintln!("== installing LiteLLM {version} into {} (pinned)", venv.display());
        let _ = std::fs::remove_dir_all(&venv);
        if !succeeds("python3", &["-m", "venv", &venv.to_string_lossy()]) {
            return Err("python3 cannot make a venv (python3-venv missing?)".into());
        }
        let pip = venv.join("bin/pip");
        let status = Command::new(&pip)
            .args(["install", "-q", "-r"])
            .arg(&requirements_path)
            .status()
            .map_err(|e| format!("cannot run pip: {e}"))?;
        if !status.success() {
            return Err(format!("pip could not install litellm {version} (offline?)"));
        }
        std::fs::write(&stamp, &requirements).map_err(|e| e.to_string())?;
    }
    Ok((program, version))
}

/// Runs the benchmark; returns the number of missed targets.
pub fn gateway_peers() -> Result<usize, String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    // The binary the packages ship: optimised with a profile of the gateway at work (PGO, then
    // BOLT where the machine has it); the plain release build where rustup's llvm-profdata
    // cannot be had (the rows say which).
    let (looprail, build) = match crate::pgo::llvm_profdata() {
        Ok(tool) => crate::pgo::optimised_binary(&tool)?,
        Err(why) => {
            eprintln!("pgo: skipped, measuring the release build without a profile: {why}");
            let built = crate::cargo_command()
                .args(["build", "--release", "-q", "-p", "looprail-cli", "--bin", "looprail"])
                .current_dir(&root)
                .status()
                .map_err(|e| format!("cannot build looprail: {e}"))?;
            if !built.success() {
                return Err("building looprail failed".into());
            }
            (root.join("target/release/looprail"), "release profile, no PGO")
        }
    };
    let mut bench = crate::cargo_command();
    bench.args(["bench", "-q", "-p", "looprail-gateway", "--bench", "peers"]).current_dir(&root);
    // The plain release build beside the packaged one, when they differ.
    let release = root.join("target/release/looprail");
    if looprail != release {
        let built = crate::cargo_command()
            .args(["build", "--release", "-q", "-p", "looprail-cli", "--bin", "looprail"])
            .current_dir(&root)
            .status()
            .is_ok_and(|s| s.success());
        if built {
            bench.env("LOOPRAIL_PEERS_RELEASE", &release);
        }
    }
    bench.env("LOOPRAIL_PEERS_LOOPRAIL", looprail).env("LOOPRAIL_PEERS_LOOPRAIL_BUILD", build);
    for (name, found) in [("NGINX", nginx()), ("LITELLM", litellm(&root))] {
        match found {
            Ok((path, version)) => {
                bench
                    .env(format!("LOOPRAIL_PEERS_{name}"), path)
                    .env(format!("LOOPRAIL_PEERS_{name}_VERSION"), version);
            }
            Err(reason) => {
                eprintln!("{}: {reason}", name.to_lowercase());
                bench
                    .env_remove(format!("LOOPRAIL_PEERS_{name}"))
                    .env(format!("LOOPRAIL_PEERS_{name}_REASON"), reason);
            }
        }
    }
    let status = bench.status().map_err(|e| format!("cannot run the benchmark: {e}"))?;
    Ok(usize::from(!status.success()))
}
