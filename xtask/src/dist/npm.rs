//! The npm packages, as esbuild and biome ship theirs: one package per platform holding the
//! binary (`@looprail/cli-linux-x64`, `…-linux-arm64-musl`, …; npm fetches only the one whose
//! `os`, `cpu` and `libc` match), and `looprail`, the wrapper that finds and runs it
//! (packaging/npm/looprail).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::targets::{ALL, Target};

/// Where the packages are laid out and packed.
const OUT: &str = "target/npm";
/// The licence files every package carries.
const LICENSES: [&str; 2] = ["LICENSE-MIT", "LICENSE-APACHE"];

/// The platform package of `target` with `binary` in it, packed; the tarball's path.
pub fn platform_package(version: &str, target: &Target, binary: &Path) -> Result<PathBuf, String> {
    let platform = target.npm_platform();
    let dir = Path::new(OUT).join(format!("cli-{platform}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("bin")).map_err(|e| e.to_string())?;
    std::fs::copy(binary, dir.join("bin/looprail")).map_err(|e| format!("{}: {e}", binary.display()))?;
    copy_licenses(&dir)?;
    let manifest = serde_json::json!({
        "name": format!("@looprail/cli-{platform}"), "version": version,
        "description": format!("The looprail binary for Linux {} ({}), installed by the `looprail` package", target.npm_cpu, target.npm_libc()),
        "license": "MIT OR Apache-2.0", "repository": "https://github.com/looprail/looprail",
        "os": ["linux"], "cpu": [target.npm_cpu], "libc": [target.npm_libc()],
        "files": ["bin/looprail", "LICENSE-MIT", "LICENSE-APACHE"], "preferUnplugged": true,
    });
    write_json(&dir.join("package.json"), &manifest)?;
    pack(&dir)
}

/// The wrapper package, naming every platform package as an optional dependency; packed.
pub fn wrapper_package(version: &str) -> Result<PathBuf, String> {
    let dir = Path::new(OUT).join("looprail");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("bin")).map_err(|e| e.to_string())?;
    for file in ["bin/looprail.js", "README.md"] {
        std::fs::copy(Path::new("packaging/npm/looprail").join(file), dir.join(file))
            .map_err(|e| format!("packaging/npm/looprail/{file}: {e}"))?;
    }
    copy_licenses(&dir)?;
    let text = std::fs::read_to_string("packaging/npm/looprail/package.json").map_err(|e| e.to_string())?;
    let mut wrapper: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    wrapper["version"] = serde_json::json!(version);
    wrapper["optionalDependencies"] = ALL
        .iter()
        .map(|t| (format!("@looprail/cli-{}", t.npm_platform()), serde_json::json!(version)))
        .collect();
    write_json(&dir.join("package.json"), &wrapper)?;
    pack(&dir)
}

fn copy_licenses(dir: &Path) -> Result<(), String> {
    for file in LICENSES {
        std::fs::copy(file, dir.join(file)).map_err(|e| format!("{file}: {e}"))?;
    }
    Ok(())
}

/// `npm pack` of `dir` into [`OUT`]; the tarball's path.
fn pack(dir: &Path) -> Result<PathBuf, String> {
    let out = std::fs::canonicalize(OUT).map_err(|e| format!("{OUT}: {e}"))?;
    let packed = Command::new("npm")
        .args(["pack", "--silent", "--pack-destination"])
        .arg(&out)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("npm pack: {e}"))?;
    if !packed.status.success() {
        return Err(format!("npm pack failed: {}", String::from_utf8_lossy(&packed.stderr)));
    }
    let name = String::from_utf8_lossy(&packed.stdout).trim().lines().last().unwrap_or_default().to_owned();
    let tarball = Path::new(OUT).join(name);
    println!("npm: {}", tarball.display());
    Ok(tarball)
}

fn write_json(path: &Path, value: &serde_json::Value) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())? + "\n";
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}
