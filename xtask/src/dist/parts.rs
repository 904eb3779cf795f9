//! What a platform's packages carry, built three ways: the `looprail` binary (the command), the
//! Python module's native library (crates/python, PyO3 abi3: one library for every Python from
//! 3.9) and the Node addon (crates/node, napi-rs: one for every Node from 18).
//!
//! For a published package each is built for its target through zig, so that a glibc build
//! needs nothing newer than glibc 2.17: the binary and the module by maturin (`--zig`, which
//! also checks the result against the wheel's platform policy), the addon by cargo-zigbuild
//! (maturin builds Python packages only). `--quick` takes all three from what `cargo test
//! --workspace` builds instead ([`from_tests`]): this machine's, not optimised, linked against
//! this machine's glibc, and free when the tests have just run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::run;
use super::targets::{Libc, Target};
use super::wheel;

/// The cargo-zigbuild release that builds the Node addon for each target.
const CARGO_ZIGBUILD: &str = "cargo-zigbuild==0.24.1";

/// The three native files of one platform's packages.
#[derive(Debug, Clone)]
pub struct Parts {
    /// The `looprail` command.
    pub binary: PathBuf,
    /// The Python module's native library (`looprail/_native.abi3.so` in the wheel).
    pub module: PathBuf,
    /// The Node addon (`looprail.node` in the platform's npm package).
    pub addon: PathBuf,
}

/// The three as `cargo test --workspace` builds them (the test suite builds the command for the
/// CLI's tests and both libraries for the in-process tests): the build is run again with the
/// environment as it is, which finds everything fresh right after the tests, and the files are
/// read from cargo's report of it.
pub fn from_tests() -> Result<Parts, String> {
    let out = crate::cargo_command()
        .args(["test", "--workspace", "--no-run", "--message-format=json-render-diagnostics"])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cargo test --no-run: {e}"))?;
    if !out.status.success() {
        return Err("cargo test --workspace --no-run failed".into());
    }
    let (mut binary, mut module, mut addon) = (None, None, None);
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        // The crates' own unit-test harnesses carry their target's name too.
        if message["reason"] != "compiler-artifact" || message["profile"]["test"] == true {
            continue;
        }
        let library = || {
            message["filenames"].as_array()?.iter().filter_map(|f| f.as_str()).find(|f| f.ends_with(".so"))
        };
        match message["target"]["name"].as_str() {
            Some("looprail") if message["target"]["kind"][0] == "bin" => {
                binary = message["executable"].as_str().map(PathBuf::from);
            }
            Some("_native") => module = library().map(PathBuf::from),
            Some("looprail_node") => addon = library().map(PathBuf::from),
            _ => {}
        }
    }
    let found = |what: Option<PathBuf>, name: &str| {
        what.ok_or_else(|| format!("`cargo test --workspace --no-run` built no {name}"))
    };
    Ok(Parts {
        binary: found(binary, "looprail binary")?,
        module: found(module, "Python module (lib_native.so)")?,
        addon: found(addon, "Node addon (liblooprail_node.so)")?,
    })
}

/// The Python module's native library for `target`, built by maturin (zig, the target's wheel
/// policy) with Cargo profile `profile` in `target_dir`: maturin's wheel of it is unpacked under
/// `target/dist/module/` and the library's path in it returned.
pub fn module(target: &Target, profile: &str, target_dir: &Path) -> Result<PathBuf, String> {
    let out = Path::new("target/dist/module").join(target.triple);
    let _ = std::fs::remove_dir_all(&out);
    let maturin = wheel::maturin_with_zig()?;
    run(Command::new(&maturin)
        .args(["build", "-m", "crates/python/Cargo.toml", "--zig", "--out"])
        .arg(&out)
        .args(["--target", target.triple, "--compatibility", target.wheel_policy, "--profile", profile])
        .env("PATH", wheel::venv_first_path(&maturin)?)
        .env("CARGO_TARGET_DIR", target_dir))?;
    let built = wheel::listed(&out.display().to_string())
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .ok_or_else(|| format!("maturin wrote no module wheel into {}", out.display()))?;
    let python = wheel::venv_python();
    run(Command::new(&python).args(["-m", "zipfile", "-e"]).arg(&built).arg(&out))?;
    let library = out.join("looprail/_native.abi3.so");
    if library.is_file() {
        Ok(library)
    } else {
        Err(format!("{} holds no looprail/_native.abi3.so", built.display()))
    }
}

/// The Node addon for `target`, built by cargo-zigbuild (zig from the tools' venv; glibc 2.17's
/// symbols for a glibc target) with Cargo profile `profile`, in its own directory under
/// `target_dir` (a musl addon is a shared library and so links the C library dynamically, unlike
/// the static musl command: the two builds' flags differ).
pub fn addon(target: &Target, profile: &str, target_dir: &Path) -> Result<PathBuf, String> {
    let maturin = wheel::maturin_with_zig()?;
    let venv = maturin.parent().ok_or("maturin has no directory")?;
    wheel::ensure_tool(CARGO_ZIGBUILD)?;
    let dir = target_dir.join("addon");
    let zig_target = match target.libc {
        Libc::Glibc => format!("{}.2.17", target.triple),
        Libc::Musl => target.triple.to_owned(),
    };
    let mut build = Command::new(venv.join("cargo-zigbuild"));
    build
        .args(["zigbuild", "-p", "looprail-node", "--lib", "--target", &zig_target, "--profile", profile])
        .env("PATH", wheel::venv_first_path(&maturin)?)
        .env("CARGO_TARGET_DIR", &dir);
    if target.libc == Libc::Musl {
        let variable = format!("CARGO_TARGET_{}_RUSTFLAGS", target.triple.replace('-', "_").to_uppercase());
        build.env(variable, "-C target-feature=-crt-static");
    }
    run(&mut build)?;
    let addon = dir.join(target.triple).join(profile).join("liblooprail_node.so");
    if addon.is_file() { Ok(addon) } else { Err(format!("cargo-zigbuild wrote no {}", addon.display())) }
}
