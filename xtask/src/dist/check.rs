//! `dist --check`: each package built is installed and run as a user would, with no Rust on
//! PATH. A glibc binary's symbol versions are read from the binary; a binary this machine runs
//! (x86_64: glibc and static musl) runs `--version` and `demo`; an aarch64 one runs the same
//! under qemu-user; the wheel pip installs here goes into a fresh venv and the npm packages
//! into a fresh project, and a gateway round trip works from each; the sdist holds a workspace
//! that resolves offline (and, for a release, pip builds it from source).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::run;
use super::targets::{Libc, Target};

/// PATH with no Rust toolchain on it (only the system's directories).
fn bare_path(first: &Path) -> String {
    format!("{}:/usr/local/bin:/usr/bin:/bin", first.display())
}

/// A scratch directory for one check, emptied first.
fn scratch(name: &str) -> Result<PathBuf, String> {
    let root = std::env::temp_dir().join(format!("looprail-dist-check-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    Ok(root)
}

/// The checks of one target's binary: the glibc version it may need at most (`floor`, for a
/// portable glibc build) and `--version` and `demo --quiet`, natively or under qemu-user.
pub fn binary(target: &Target, binary: &Path, host: &str, floor: Option<(u32, u32)>) -> Result<(), String> {
    if let Some(floor) = floor {
        super::glibc::check_floor(binary, floor)?;
    }
    let runner = if target.runs_here(host) { None } else { Some(qemu(target)?) };
    for args in [&["--version"][..], &["demo", "--quiet"]] {
        let mut command = match &runner {
            Some((qemu, sysroot)) => {
                let mut c = Command::new(qemu);
                if let Some(sysroot) = sysroot {
                    c.arg("-L").arg(sysroot);
                }
                c.arg(binary);
                c
            }
            None => Command::new(binary),
        };
        run(command.args(args).env("PATH", "/usr/bin:/bin").env_remove("CARGO"))?;
    }
    let how = if runner.is_some() { "under qemu-user" } else { "natively" };
    println!("dist check: {} runs --version and demo {how}", target.triple);
    Ok(())
}

/// qemu-user for the target's CPU and, for a glibc target, the directory holding that CPU's
/// glibc (Debian's `libc6-<arch>-cross`); installed with apt when missing and allowed.
fn qemu(target: &Target) -> Result<(PathBuf, Option<PathBuf>), String> {
    let (qemu_names, cross_package, sysroot) = match target.cpu() {
        "aarch64" => (["qemu-aarch64-static", "qemu-aarch64"], "libc6-arm64-cross", "/usr/aarch64-linux-gnu"),
        other => return Err(format!("no qemu-user set up for {other}")),
    };
    let find = || {
        qemu_names.iter().find_map(|name| {
            std::env::var_os("PATH")
                .and_then(|path| std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file()))
        })
    };
    let needs_libc =
        target.libc == Libc::Glibc && !Path::new(sysroot).join("lib/ld-linux-aarch64.so.1").exists();
    if find().is_none() || needs_libc {
        let mut packages = vec!["qemu-user-static"];
        if needs_libc {
            packages.push(cross_package);
        }
        apt_install(&packages)?;
    }
    let qemu = find().ok_or("qemu-user was installed but is not on PATH")?;
    Ok((qemu, (target.libc == Libc::Glibc).then(|| PathBuf::from(sysroot))))
}

/// Debian's packages, installed with apt-get when this process may (root); otherwise an error
/// that says what to install.
fn apt_install(packages: &[&str]) -> Result<(), String> {
    let root =
        Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root || std::env::var_os("LOOPRAIL_NO_APT").is_some() {
        return Err(format!(
            "running the aarch64 binaries needs qemu-user: `apt-get install {}` (Debian or Ubuntu)",
            packages.join(" ")
        ));
    }
    run(Command::new("apt-get").args(["update", "-qq"]))?;
    run(Command::new("apt-get")
        .args(["install", "-y", "-qq", "--no-install-recommends"])
        .args(packages)
        .env("DEBIAN_FRONTEND", "noninteractive"))
}

/// The wheel into a fresh venv: `--version`, `demo` and a gateway round trip from it, and the
/// module's guard through its ladder (xtask/scripts/guard_in_python.py).
pub fn wheel(wheel: &Path) -> Result<(), String> {
    let root = scratch("wheel")?;
    let venv = root.join("venv");
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    run(Command::new(venv.join("bin/pip"))
        .args(["install", "-q", "--disable-pip-version-check"])
        .arg(wheel))?;
    let script = std::fs::canonicalize("xtask/scripts/round_trip.py").map_err(|e| e.to_string())?;
    let path = bare_path(&venv.join("bin"));
    for args in [&["--version"][..], &["demo", "--quiet"]] {
        run(Command::new("looprail").args(args).env("PATH", &path).env_remove("CARGO").current_dir(&root))?;
    }
    run(Command::new(venv.join("bin/python")).arg(&script).arg("looprail").env("PATH", &path))?;
    let guard = std::fs::canonicalize("xtask/scripts/guard_in_python.py").map_err(|e| e.to_string())?;
    run(Command::new(venv.join("bin/python")).arg(&guard).env("PATH", &path).current_dir(&root))?;
    let _ = std::fs::remove_dir_all(&root);
    println!("dist check: the wheel installed with pip runs `looprail` and its guard with no Rust on PATH");
    Ok(())
}

/// The wrapper and the platform tarballs into a fresh npm project: `--version`, `demo` and a
/// gateway round trip through npx and through the wrapper run directly, and the guard through
/// its ladder from `require('looprail')` (xtask/scripts/guard_in_node.js).
pub fn npm(tarballs: &[PathBuf]) -> Result<(), String> {
    let project = scratch("npm")?;
    let absolute: Vec<PathBuf> = tarballs.iter().filter_map(|t| std::fs::canonicalize(t).ok()).collect();
    run(Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "--omit=optional"])
        .args(&absolute)
        .current_dir(&project))?;
    let script = std::fs::canonicalize("xtask/scripts/round_trip.py").map_err(|e| e.to_string())?;
    let npm_path: String = std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|d| !d.contains(".cargo") && !d.contains("rustup"))
        .collect::<Vec<_>>()
        .join(":");
    for args in [&["looprail", "--version"][..], &["looprail", "demo", "--quiet"]] {
        run(Command::new("npx").args(args).env("PATH", &npm_path).current_dir(&project))?;
    }
    // Through npx, stopped as a terminal's Ctrl-C does (npx does not pass a lone signal on); and
    // the wrapper run directly, stopped as a process manager does: it must pass SIGTERM on.
    run(Command::new("python3")
        .arg(&script)
        .args(["--stop-group", "npx", "looprail"])
        .env("PATH", &npm_path)
        .current_dir(&project))?;
    run(Command::new("python3")
        .arg(&script)
        .args(["node", "node_modules/looprail/bin/looprail.js"])
        .env("PATH", &npm_path)
        .current_dir(&project))?;
    // Run from inside the project, where `require('looprail')` resolves as in a user's code.
    std::fs::copy("xtask/scripts/guard_in_node.js", project.join("guard.js")).map_err(|e| e.to_string())?;
    run(Command::new("node").arg("guard.js").env("PATH", &npm_path).current_dir(&project))?;
    let _ = std::fs::remove_dir_all(&project);
    println!("dist check: the npm packages run `looprail` through npx and its guard with no Rust on PATH");
    Ok(())
}

/// The sdist: unpacked, its workspace must resolve from its own files with nothing fetched
/// (`cargo metadata --offline`: every crate the command needs is in it) and keep every version
/// its lock file pins (cargo only drops the entries of the members left out); with `build`, pip also builds and installs it from source in a fresh venv, as on a
/// platform with no wheel, and the command it installed runs. (Where Rust is missing, maturin's
/// build backend fetches a toolchain into a temporary directory, or stops saying that Rust is
/// needed.)
pub fn sdist(sdist: &Path, build: bool) -> Result<(), String> {
    let root = scratch("sdist")?;
    run(Command::new("tar").arg("xzf").arg(sdist).arg("-C").arg(&root))?;
    let tree = std::fs::read_dir(&root)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .ok_or("the sdist unpacked to nothing")?;
    let manifest = std::fs::read_to_string(tree.join("pyproject.toml"))
        .map_err(|e| format!("the sdist's pyproject.toml: {e}"))?;
    if !manifest.contains("bindings = \"bin\"")
        || !manifest.contains("manifest-path = \"crates/cli/Cargo.toml\"")
    {
        return Err("the sdist's pyproject.toml does not build the looprail binary from crates/cli".into());
    }
    let pinned = |text: &str| -> std::collections::BTreeSet<(String, String)> {
        let mut pairs = std::collections::BTreeSet::new();
        let mut name = None;
        for line in text.lines() {
            if let Some(value) = line.strip_prefix("name = ") {
                name = Some(value.trim_matches('"').to_owned());
            } else if let (Some(value), Some(n)) = (line.strip_prefix("version = "), name.take()) {
                pairs.insert((n, value.trim_matches('"').to_owned()));
            }
        }
        pairs
    };
    let lock = tree.join("Cargo.lock");
    let before = pinned(&std::fs::read_to_string(&lock).map_err(|e| format!("the sdist's Cargo.lock: {e}"))?);
    let out = crate::cargo_command()
        .args(["metadata", "--offline", "--format-version", "1", "--manifest-path"])
        .arg(tree.join("crates/cli/Cargo.toml"))
        .output()
        .map_err(|e| format!("cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "the sdist's workspace does not resolve: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let after = pinned(&std::fs::read_to_string(&lock).map_err(|e| e.to_string())?);
    if let Some((name, version)) = after.difference(&before).next() {
        return Err(format!(
            "the sdist's workspace resolves {name} {version}, which its lock file does not pin"
        ));
    }
    println!(
        "dist check: the sdist holds a workspace that resolves offline with the versions its lock file pins"
    );
    if build {
        let venv = root.join("venv");
        run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
        run(Command::new(venv.join("bin/pip"))
            .args(["install", "-q", "--disable-pip-version-check", "--no-binary", "looprail"])
            .arg(sdist))?;
        run(Command::new(venv.join("bin/looprail")).arg("--version"))?;
        println!("dist check: pip built the sdist from source and its looprail runs");
    }
    let _ = std::fs::remove_dir_all(&root);
    Ok(())
}
