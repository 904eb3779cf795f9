//! `cargo xtask dist [--target TRIPLE] [--check]`: the `looprail` binary packaged for people
//! without a Rust toolchain. A Python wheel (maturin, bindings = "bin", from
//! crates/cli/pyproject.toml) into `target/wheels/`, and the npm packages into `target/npm/`:
//! `@looprail/cli-<os>-<cpu>` holding the binary, and `looprail`, the wrapper that runs it
//! (packaging/npm/looprail), as esbuild and biome ship theirs. The version is the workspace's.
//! A target other than this machine's is built with `maturin --zig` (Linux); macOS wheels are
//! built on a macOS machine. For this machine's target the binary is optimised with a profile
//! of the gateway at work (`pgo`; `--no-pgo` skips it, and so does a machine that cannot fetch
//! rustup's `llvm-tools`, with a warning); other targets get none. `--check` then installs both
//! into fresh places with no Rust on PATH and runs `looprail --version`, `looprail demo` and one
//! gateway round trip from each.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The maturin release the wheels are built with.
const MATURIN: &str = "maturin==1.16.0";
/// The `wheel` release that repacks a wheel.
const WHEEL: &str = "wheel==0.45.1";
/// The most a wheel may weigh.
const WHEEL_LIMIT: u64 = 15 << 20;

/// Runs `command`, shown first; an error unless it succeeds.
pub(crate) fn run(command: &mut Command) -> Result<(), String> {
    let shown = format!("{command:?}");
    eprintln!("$ {shown}");
    let status = command.status().map_err(|e| format!("cannot start {shown}: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("{shown} failed ({status})")) }
}

/// Runs `command` with its output in `log`; on failure the error carries the log's last lines.
pub(crate) fn run_logged(command: &mut Command, log: &Path) -> Result<(), String> {
    let shown = format!("{command:?}");
    eprintln!("$ {shown} > {}", log.display());
    let file = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let errors = file.try_clone().map_err(|e| e.to_string())?;
    let status =
        command.stdout(file).stderr(errors).status().map_err(|e| format!("cannot start {shown}: {e}"))?;
    if status.success() {
        return Ok(());
    }
    Err(format!("{shown} failed ({status}):\n{}", log_tail(log)))
}

/// The last lines of the log at `path` (what an error quotes: CI keeps no files).
pub(crate) fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// The workspace's version (`[workspace.package] version`).
fn version() -> Result<String, String> {
    let text = std::fs::read_to_string("Cargo.toml").map_err(|e| e.to_string())?;
    let package = text.split("[workspace.package]").nth(1).ok_or("no [workspace.package]")?;
    package
        .lines()
        .find_map(|l| l.strip_prefix("version = "))
        .map(|v| v.trim().trim_matches('"').to_owned())
        .ok_or_else(|| "no workspace version".to_owned())
}

/// npm's names for a Rust target's OS and CPU.
fn npm_platform(triple: &str) -> Result<(&'static str, &'static str), String> {
    let os = if triple.contains("linux") {
        "linux"
    } else if triple.contains("apple") {
        "darwin"
    } else if triple.contains("windows") {
        "win32"
    } else {
        return Err(format!("no npm platform for {triple}"));
    };
    let cpu = if triple.starts_with("x86_64") {
        "x64"
    } else if triple.starts_with("aarch64") {
        "arm64"
    } else {
        return Err(format!("no npm CPU for {triple}"));
    };
    Ok((os, cpu))
}

/// This machine's target triple.
pub(crate) fn host() -> Result<String, String> {
    let out = Command::new("rustc").arg("-vV").output().map_err(|e| format!("rustc: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_owned)
        .ok_or_else(|| "rustc -vV names no host".to_owned())
}

/// A venv under `target/dist/` with maturin (and zig for other targets).
fn maturin(cross: bool) -> Result<PathBuf, String> {
    let venv = Path::new("target/dist/venv");
    if !venv.join("bin/python").exists() {
        run(Command::new("python3").args(["-m", "venv"]).arg(venv))?;
    }
    // `wheel` puts the binary BOLT rewrote into the wheel maturin built.
    let mut packages = vec![MATURIN, WHEEL];
    if cross {
        packages.push("ziglang==0.13.0");
    }
    run(Command::new(venv.join("bin/pip"))
        .args(["install", "-q", "--disable-pip-version-check"])
        .args(&packages))?;
    Ok(venv.join("bin/maturin"))
}

pub fn dist(flags: &[String]) -> Result<(), String> {
    let host = host()?;
    let target = flags.iter().position(|f| f == "--target").and_then(|i| flags.get(i + 1)).cloned();
    let triple = target.clone().unwrap_or_else(|| host.clone());
    let cross = triple != host;
    let version = version()?;
    // Optimised with a profile of the gateway at work (see `pgo`), for this machine's target
    // only: the training runs the binary it profiles. Without rustup's llvm-profdata (a machine
    // that cannot reach rustup's server) the binary is built as before, and says so; a training
    // that fails is an error.
    let tool = (!cross && !flags.iter().any(|f| f == "--no-pgo"))
        .then(|| {
            crate::pgo::llvm_profdata()
                .map_err(|why| eprintln!("pgo: skipped, the binary is built without a profile: {why}"))
                .ok()
        })
        .flatten();
    // Then rewritten by BOLT where the machine has it (see `bolt`), without it as PGO left it.
    let bolt = tool.is_some().then(crate::bolt::find_or_say).flatten();
    // The wheel (maturin builds the binary with the `dist` profile: release, stripped).
    let mut build = Command::new(maturin(cross)?);
    build.args(["build", "-m", "crates/cli/Cargo.toml", "--out", "target/wheels"]);
    if let Some(tool) = &tool {
        let profdata = crate::pgo::profile(tool)?;
        build
            .envs(crate::pgo::build_env(&profdata, bolt.is_some()))
            .env("CARGO_TARGET_DIR", crate::pgo::optimised_dir());
    }
    if let Some(target) = &target {
        build.args(["--target", target]);
    }
    if cross {
        build.arg("--zig");
    }
    run(&mut build)?;
    let wheel = std::fs::read_dir("target/wheels")
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy().into_owned();
            name.starts_with(&format!("looprail-{version}-")) && name.ends_with(".whl")
        })
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .ok_or("maturin wrote no wheel")?;
    let built = if tool.is_some() { crate::pgo::optimised_dir() } else { PathBuf::from("target") };
    let mut binary = match &target {
        Some(t) => built.join(t).join("dist/looprail"),
        None => built.join("dist/looprail"),
    };
    if let Some(bolt) = &bolt {
        binary = crate::bolt::optimise(bolt, &binary)?;
        put_in_wheel(&wheel, &binary)?;
    }
    let size = wheel.metadata().map_err(|e| e.to_string())?.len();
    println!("wheel: {} ({:.1} MB; limit {} MB)", wheel.display(), size as f64 / 1e6, WHEEL_LIMIT >> 20);
    if size > WHEEL_LIMIT {
        return Err(format!("the wheel weighs {size} bytes, over {WHEEL_LIMIT}"));
    }
    let tarballs = npm(&version, &triple, &binary)?;
    if flags.iter().any(|f| f == "--check") {
        if cross {
            return Err("--check runs the packages: build for this machine to check them".into());
        }
        check(&wheel, &tarballs)?;
    }
    Ok(())
}

/// The wheel at `wheel` with its `looprail` replaced by `binary` (the one BOLT rewrote after
/// maturin built it), repacked by the `wheel` tool so its RECORD lists the new file's hash.
fn put_in_wheel(wheel: &Path, binary: &Path) -> Result<(), String> {
    let python = Path::new("target/dist/venv/bin/python");
    let unpacked = Path::new("target/dist/unpacked");
    let _ = std::fs::remove_dir_all(unpacked);
    run(Command::new(python).args(["-m", "wheel", "unpack", "-d"]).arg(unpacked).arg(wheel))?;
    let tree = std::fs::read_dir(unpacked)
        .map_err(|e| format!("{}: {e}", unpacked.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .ok_or("the wheel unpacked to nothing")?;
    let scripts = std::fs::read_dir(&tree)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| e.path().join("scripts/looprail"))
        .find(|p| p.is_file())
        .ok_or("the wheel carries no scripts/looprail")?;
    std::fs::copy(binary, &scripts).map_err(|e| format!("{}: {e}", scripts.display()))?;
    let out = wheel.parent().ok_or("the wheel has no directory")?;
    run(Command::new(python).args(["-m", "wheel", "pack", "-d"]).arg(out).arg(&tree))?;
    let _ = std::fs::remove_dir_all(unpacked);
    Ok(())
}

/// The npm packages in `target/npm/`, packed: the platform's and the wrapper.
fn npm(version: &str, triple: &str, binary: &Path) -> Result<Vec<PathBuf>, String> {
    let (os, cpu) = npm_platform(triple)?;
    let out = Path::new("target/npm");
    let platform_dir = out.join(format!("cli-{os}-{cpu}"));
    let _ = std::fs::remove_dir_all(&platform_dir);
    std::fs::create_dir_all(platform_dir.join("bin")).map_err(|e| e.to_string())?;
    std::fs::copy(binary, platform_dir.join("bin/looprail"))
        .map_err(|e| format!("{}: {e}", binary.display()))?;
    let platform = serde_json::json!({
        "name": format!("@looprail/cli-{os}-{cpu}"), "version": version,
        "description": format!("The looprail binary for {os} {cpu} (installed by the `looprail` package)"),
        "license": "MIT OR Apache-2.0", "repository": "https://github.com/looprail/looprail",
        "os": [os], "cpu": [cpu], "files": ["bin/looprail"], "preferUnplugged": true,
    });
    write_json(&platform_dir.join("package.json"), &platform)?;
    let wrapper_dir = out.join("looprail");
    let _ = std::fs::remove_dir_all(&wrapper_dir);
    std::fs::create_dir_all(wrapper_dir.join("bin")).map_err(|e| e.to_string())?;
    for file in ["bin/looprail.js", "README.md"] {
        std::fs::copy(Path::new("packaging/npm/looprail").join(file), wrapper_dir.join(file))
            .map_err(|e| format!("packaging/npm/looprail/{file}: {e}"))?;
    }
    let text = std::fs::read_to_string("packaging/npm/looprail/package.json").map_err(|e| e.to_string())?;
    let mut wrapper: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    wrapper["version"] = serde_json::json!(version);
    let platforms = ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64"];
    wrapper["optionalDependencies"] =
        platforms.iter().map(|p| (format!("@looprail/cli-{p}"), serde_json::json!(version))).collect();
    write_json(&wrapper_dir.join("package.json"), &wrapper)?;
    let mut tarballs = Vec::new();
    for dir in [&platform_dir, &wrapper_dir] {
        let packed = Command::new("npm")
            .args(["pack", "--silent", "--pack-destination"])
            .arg(std::fs::canonicalize(out).map_err(|e| e.to_string())?)
            .current_dir(dir)
            .output()
            .map_err(|e| format!("npm pack: {e}"))?;
        if !packed.status.success() {
            return Err(format!("npm pack failed: {}", String::from_utf8_lossy(&packed.stderr)));
        }
        let name =
            String::from_utf8_lossy(&packed.stdout).trim().lines().last().unwrap_or_default().to_owned();
        println!("npm: {}", out.join(&name).display());
        tarballs.push(out.join(name));
    }
    Ok(tarballs)
}

fn write_json(path: &Path, value: &serde_json::Value) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())? + "\n";
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// PATH with no Rust toolchain on it (only the system's directories).
fn bare_path(first: &Path) -> String {
    format!("{}:/usr/local/bin:/usr/bin:/bin", first.display())
}

/// Installs the wheel into a fresh venv and the npm tarballs into a fresh directory, neither
/// with Rust on PATH, and runs the command from each.
fn check(wheel: &Path, tarballs: &[PathBuf]) -> Result<(), String> {
    let root = std::env::temp_dir().join(format!("looprail-dist-check-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
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

    let project = root.join("npm-project");
    std::fs::create_dir_all(&project).map_err(|e| e.to_string())?;
    let absolute: Vec<PathBuf> = tarballs.iter().filter_map(|t| std::fs::canonicalize(t).ok()).collect();
    run(Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "--omit=optional"])
        .args(&absolute)
        .current_dir(&project))?;
    let node_path = std::env::var("PATH").unwrap_or_default();
    let npm_path: String = node_path
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
    let _ = std::fs::remove_dir_all(&root);
    println!("dist check: pip and npx installs run `looprail` with no Rust on PATH");
    Ok(())
}

/// The release's packages for people without Rust, as `cargo xtask dist` left them: the wheels
/// in `target/wheels/` (uploaded with maturin) and the npm tarballs in `target/npm/` (the
/// platforms' first, the wrapper that names them last). Without `publish`, only listed.
pub fn publish_packages(version: &str, publish: bool) -> Result<(), String> {
    let listed = |dir: &str, suffix: &str| -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        found.retain(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy().into_owned();
            name.ends_with(suffix) && name.contains(version)
        });
        found.sort_by_key(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("looprail-")));
        found
    };
    let (wheels, tarballs) = (listed("target/wheels", ".whl"), listed("target/npm", ".tgz"));
    if wheels.is_empty() || tarballs.is_empty() {
        println!("\nno wheels or npm packages of {version}: run `cargo xtask dist` (on each platform) first");
        return Ok(());
    }
    if !publish {
        println!("\npackages to publish (with --publish):");
        for package in wheels.iter().chain(&tarballs) {
            println!("  {}", package.display());
        }
        return Ok(());
    }
    run(Command::new(maturin(false)?).arg("upload").args(&wheels))?;
    for tarball in &tarballs {
        run(Command::new("npm").args(["publish", "--access", "public"]).arg(tarball))?;
    }
    Ok(())
}
