//! maturin's part of the Python packages: the tools' venv (maturin, wheel, zig), the `looprail`
//! binary built for a target (maturin, `bindings = "bin"`, from crates/cli/pyproject.toml,
//! linked through zig for the target's platform policy; [`super::python_wheel`] then puts it
//! with the Python module into the published wheel), and the sdist, from which pip builds the
//! command on any other platform where Rust is installed.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::run;
use super::targets::Target;

/// The maturin release the wheels are built with.
const MATURIN: &str = "maturin==1.16.0";
/// The `wheel` release that repacks a wheel.
const WHEEL: &str = "wheel==0.45.1";
/// zig, the cross linker and C compiler (from PyPI, as maturin's `--zig` expects it).
const ZIG: &str = "ziglang==0.13.0";
/// Where the Python packages are written.
pub const OUT: &str = "target/wheels";

/// The tools' venv under `target/dist/`.
const VENV: &str = "target/dist/venv";

/// The venv's Python.
pub fn venv_python() -> PathBuf {
    Path::new(VENV).join("bin/python")
}

/// A venv under `target/dist/` with maturin and wheel; maturin's path.
pub fn maturin() -> Result<PathBuf, String> {
    ensure_tool(&[MATURIN, WHEEL].join(" "))?;
    Ok(Path::new(VENV).join("bin/maturin"))
}

/// The same venv with zig too, for the builds through zig; maturin's path.
pub fn maturin_with_zig() -> Result<PathBuf, String> {
    ensure_tool(&[MATURIN, WHEEL, ZIG].join(" "))?;
    Ok(Path::new(VENV).join("bin/maturin"))
}

/// The tools' venv with `requirements` (pip's, space-separated) installed; each set is
/// installed once (a stamp file per set remembers it).
pub fn ensure_tool(requirements: &str) -> Result<(), String> {
    let venv = Path::new(VENV);
    if !venv.join("bin/python").exists() {
        run(Command::new("python3").args(["-m", "venv"]).arg(venv))?;
    }
    let stamp = venv.join(format!("looprail-tools-{}", requirements.replace([' ', '=', '<', '>'], "_")));
    if !stamp.exists() {
        run(Command::new(venv.join("bin/pip"))
            .args(["install", "-q", "--disable-pip-version-check"])
            .args(requirements.split(' ')))?;
        std::fs::write(&stamp, requirements).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Where maturin writes the command-only wheels the published ones are assembled from.
const PARTS: &str = "target/dist/cli-wheels";

/// The wheel file name's platform part for `target`: `manylinux2014_x86_64`,
/// `musllinux_1_2_aarch64`.
pub fn platform_tag(target: &Target) -> String {
    format!("{}_{}", target.wheel_policy, target.cpu())
}

/// Builds the `looprail` binary for `target` with maturin (zig; the target's platform policy
/// checked) and Cargo profile `profile` (`dist`, or the quicker `dist-check`) in `target_dir`,
/// with `env` added (the profile-guided build's flags); the binary's path.
pub fn build(
    target: &Target,
    profile: &str,
    target_dir: &Path,
    env: &[(&'static str, String)],
) -> Result<PathBuf, String> {
    let _ = std::fs::remove_dir_all(PARTS);
    let maturin = maturin_with_zig()?;
    let mut build = Command::new(&maturin);
    build
        .args(["build", "-m", "crates/cli/Cargo.toml", "--out", PARTS, "--zig"])
        // maturin finds zig through the Python on PATH (`python -m ziglang`): the venv's first.
        .env("PATH", venv_first_path(&maturin)?)
        .args(["--target", target.triple, "--compatibility", target.wheel_policy, "--profile", profile])
        .env("CARGO_TARGET_DIR", target_dir)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    run(&mut build)?;
    Ok(target_dir.join(target.triple).join(profile).join("looprail"))
}

/// Builds this machine's `looprail` binary linked natively (no zig: the build machine's glibc)
/// with the `dist` profile in `target_dir` and `env` added: the binary's path and the glibc
/// version it needs, as maturin reads it for the wheel's tag (`manylinux_2_X`).
pub fn build_native(
    target_dir: &Path,
    env: &[(&'static str, String)],
) -> Result<(PathBuf, (u32, u32)), String> {
    let _ = std::fs::remove_dir_all(PARTS);
    let maturin = maturin()?;
    run(Command::new(&maturin)
        .args(["build", "-m", "crates/cli/Cargo.toml", "--out", PARTS, "--profile", "dist"])
        .env("CARGO_TARGET_DIR", target_dir)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str()))))?;
    let wheel = listed(PARTS)
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().contains("manylinux_2_")))
        .ok_or("maturin wrote no natively tagged wheel")?;
    let name = wheel.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let floor = name
        .split("manylinux_")
        .nth(1)
        .and_then(|rest| {
            let mut parts = rest.split('_');
            Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
        })
        .ok_or_else(|| format!("no glibc version in the tag of {name}"))?;
    Ok((target_dir.join("dist/looprail"), floor))
}

/// PATH with the directory of the venv's tools (`maturin`'s) first.
pub fn venv_first_path(maturin: &Path) -> Result<std::ffi::OsString, String> {
    let bin = std::fs::canonicalize(maturin.parent().ok_or("maturin has no directory")?)
        .map_err(|e| e.to_string())?;
    path_with_first(&bin)
}

/// PATH with `dir` first.
pub fn path_with_first(dir: &Path) -> Result<std::ffi::OsString, String> {
    let mut dirs = vec![dir.to_path_buf()];
    dirs.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    std::env::join_paths(dirs).map_err(|e| e.to_string())
}

/// The sdist (`looprail-<version>.tar.gz`), pip's way in on platforms without a wheel.
pub fn sdist(version: &str) -> Result<PathBuf, String> {
    let path = Path::new(OUT).join(format!("looprail-{version}.tar.gz"));
    let _ = std::fs::remove_file(&path);
    run(Command::new(maturin()?).args(["sdist", "-m", "crates/cli/Cargo.toml", "--out", OUT]))?;
    if path.is_file() { Ok(path) } else { Err(format!("maturin wrote no {}", path.display())) }
}

/// The entries of `dir` (none when it cannot be read).
pub fn listed(dir: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default()
}
