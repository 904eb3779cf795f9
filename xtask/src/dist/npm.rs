//! The npm packages, as esbuild and biome ship theirs: one package per platform holding the
//! binary and the guard's Node addon (`@looprail/cli-linux-x64`, `…-linux-arm64-musl`, …; npm
//! fetches only the one whose `os`, `cpu` and `libc` match), and `looprail`
//! (packaging/npm/looprail): the guard's JavaScript API, which loads the platform's addon, and
//! the wrapper that finds and runs the platform's binary.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::parts::Parts;
use super::targets::{ALL, Target};

/// Where the packages are laid out and packed.
const OUT: &str = "target/npm";
/// The licence files every package carries.
const LICENSES: [&str; 2] = ["LICENSE-MIT", "LICENSE-APACHE"];

/// The platform package of `target` with the binary and the addon of `parts` in it, packed; the
/// tarball's path.
pub fn platform_package(version: &str, target: &Target, parts: &Parts) -> Result<PathBuf, String> {
    let platform = target.npm_platform();
    let dir = Path::new(OUT).join(format!("cli-{platform}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("bin")).map_err(|e| e.to_string())?;
    std::fs::copy(&parts.binary, dir.join("bin/looprail"))
        .map_err(|e| format!("{}: {e}", parts.binary.display()))?;
    std::fs::copy(&parts.addon, dir.join("looprail.node"))
        .map_err(|e| format!("{}: {e}", parts.addon.display()))?;
    copy_licenses(&dir)?;
    let manifest = serde_json::json!({
        "name": format!("@looprail/cli-{platform}"), "version": version,
        "description": format!("The looprail binary and Node addon for Linux {} ({}), installed by the `looprail` package", target.npm_cpu, target.npm_libc()),
        "license": "MIT OR Apache-2.0", "repository": "https://github.com/looprail/looprail",
        "os": ["linux"], "cpu": [target.npm_cpu], "libc": [target.npm_libc()],
        "files": ["bin/looprail", "looprail.node", "LICENSE-MIT", "LICENSE-APACHE"], "preferUnplugged": true,
    });
    write_json(&dir.join("package.json"), &manifest)?;
    pack(&dir)
}

/// The `looprail` package, naming every platform package as an optional dependency: the files
/// its package.json lists, from packaging/npm/looprail; packed.
pub fn wrapper_package(version: &str) -> Result<PathBuf, String> {
    let source = Path::new("packaging/npm/looprail");
    let dir = Path::new(OUT).join("looprail");
    let _ = std::fs::remove_dir_all(&dir);
    let text = std::fs::read_to_string(source.join("package.json")).map_err(|e| e.to_string())?;
    let mut wrapper: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let files: Vec<String> = wrapper["files"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(str::to_owned))
        .collect();
    for file in files.iter().filter(|f| !LICENSES.contains(&f.as_str())) {
        let to = dir.join(file);
        std::fs::create_dir_all(to.parent().unwrap_or(&dir)).map_err(|e| e.to_string())?;
        std::fs::copy(source.join(file), &to).map_err(|e| format!("packaging/npm/looprail/{file}: {e}"))?;
    }
    copy_licenses(&dir)?;
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

#[cfg(test)]
mod tests {
    #[test]
    fn every_file_the_package_lists_exists_and_the_api_is_exported() {
        let source = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../packaging/npm/looprail"));
        let text = std::fs::read_to_string(source.join("package.json")).unwrap();
        let manifest: serde_json::Value = serde_json::from_str(&text).unwrap();
        let files: Vec<&str> =
            manifest["files"].as_array().unwrap().iter().filter_map(|f| f.as_str()).collect();
        for file in files.iter().filter(|f| !super::LICENSES.contains(f)) {
            assert!(
                source.join(file).is_file(),
                "package.json lists {file}, which packaging/npm/looprail lacks"
            );
        }
        for (entry, path) in [(".", "./index.js"), ("./ai-sdk", "./ai-sdk.js")] {
            let target = manifest["exports"][entry]["default"].as_str().unwrap();
            assert_eq!(target, path);
            assert!(files.contains(&&target[2..]), "{target} is exported but not packed");
        }
        assert!(files.contains(&"platform.js"), "index.js and bin/looprail.js load platform.js");
    }
}
