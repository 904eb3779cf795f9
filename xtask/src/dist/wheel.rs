//! The Python packages: a wheel per target (maturin, `bindings = "bin"`, from
//! crates/cli/pyproject.toml, linked through zig for the target's platform policy) and the
//! sdist, from which pip builds on any other platform where Rust is installed.

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

/// A venv under `target/dist/` with maturin, wheel and zig; maturin's path.
pub fn maturin() -> Result<PathBuf, String> {
    let venv = Path::new("target/dist/venv");
    if !venv.join("bin/python").exists() {
        run(Command::new("python3").args(["-m", "venv"]).arg(venv))?;
    }
    let stamp = venv.join("looprail-tools");
    let wanted = [MATURIN, WHEEL, ZIG].join(" ");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(wanted.as_str()) {
        run(Command::new(venv.join("bin/pip")).args([
            "install",
            "-q",
            "--disable-pip-version-check",
            MATURIN,
            WHEEL,
            ZIG,
        ]))?;
        std::fs::write(&stamp, &wanted).map_err(|e| e.to_string())?;
    }
    Ok(venv.join("bin/maturin"))
}

/// The wheel file name's platform part for `target`: `manylinux2014_x86_64`,
/// `musllinux_1_2_aarch64`.
fn platform_tag(target: &Target) -> String {
    let cpu = target.triple.split('-').next().unwrap_or_default();
    format!("{}_{cpu}", target.wheel_policy)
}

/// Builds `target`'s wheel with Cargo profile `profile` (`dist`, or the quicker `dist-check`) in
/// `target_dir`, with `env` added (the profile-guided build's flags); the wheel's path and the
/// binary's.
pub fn build(
    version: &str,
    target: &Target,
    profile: &str,
    target_dir: &Path,
    env: &[(&'static str, String)],
) -> Result<(PathBuf, PathBuf), String> {
    let tag = platform_tag(target);
    let ours = |p: &Path| {
        let name = p.file_name().unwrap_or_default().to_string_lossy().into_owned();
        name.starts_with(&format!("looprail-{version}-")) && name.ends_with(".whl") && name.contains(&tag)
    };
    for old in listed(OUT).into_iter().filter(|p| ours(p)) {
        let _ = std::fs::remove_file(old);
    }
    let maturin = maturin()?;
    let mut build = Command::new(&maturin);
    build
        .args(["build", "-m", "crates/cli/Cargo.toml", "--out", OUT, "--zig"])
        // maturin finds zig through the Python on PATH (`python -m ziglang`): the venv's first.
        .env("PATH", venv_first_path(&maturin)?)
        .args(["--target", target.triple, "--compatibility", target.wheel_policy, "--profile", profile])
        .env("CARGO_TARGET_DIR", target_dir)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    run(&mut build)?;
    let wheel =
        listed(OUT).into_iter().find(|p| ours(p)).ok_or_else(|| format!("maturin wrote no {tag} wheel"))?;
    Ok((wheel, target_dir.join(target.triple).join(profile).join("looprail")))
}

/// Builds this machine's wheel linked natively (no zig: the build machine's glibc) with the
/// `dist` profile in `target_dir` and `env` added, tagged by maturin for the glibc its binary
/// needs: the wheel's path, the binary's, and that glibc version (from the tag).
pub fn build_native(
    version: &str,
    target_dir: &Path,
    env: &[(&'static str, String)],
) -> Result<(PathBuf, PathBuf, (u32, u32)), String> {
    let before: Vec<PathBuf> = listed(OUT);
    let maturin = maturin()?;
    run(Command::new(&maturin)
        .args(["build", "-m", "crates/cli/Cargo.toml", "--out", OUT, "--profile", "dist"])
        .env("CARGO_TARGET_DIR", target_dir)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str()))))?;
    let prefix = format!("looprail-{version}-");
    let wheel = listed(OUT)
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy().into_owned();
            name.starts_with(&prefix)
                && name.ends_with(".whl")
                && name.contains("manylinux_2_")
                && !name.contains("manylinux2014")
        })
        .max_by_key(|p| (!before.contains(p), p.metadata().and_then(|m| m.modified()).ok()))
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
    Ok((wheel, target_dir.join("dist/looprail"), floor))
}

/// PATH with the directory of the venv's tools (`maturin`'s) first.
fn venv_first_path(maturin: &Path) -> Result<std::ffi::OsString, String> {
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

/// The wheel at `wheel` with its `looprail` replaced by `binary` (the one BOLT rewrote after
/// maturin built it), repacked by the `wheel` tool so its RECORD lists the new file's hash.
pub fn replace_binary(wheel: &Path, binary: &Path) -> Result<(), String> {
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
