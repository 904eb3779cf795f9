//! The published wheel, put together from one platform's [`Parts`]: the `looprail` command as
//! the wheel's script (`looprail-<version>.data/scripts/looprail`, which pip installs on PATH),
//! the `looprail` Python package (crates/python/python/looprail) with the module's native
//! library in it (`_native.abi3.so`), and the metadata of crates/cli/pyproject.toml. Tagged
//! `cp39-abi3-<platform>`: one wheel per platform for every CPython from 3.9. The `wheel` tool
//! packs the laid-out tree (it writes the RECORD with each file's hash).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::parts::Parts;
use super::{run, wheel};

/// The package's Python sources.
const SOURCES: &str = "crates/python/python/looprail";
/// The package's definition (name, summary, readme...), the sdist's too.
const PYPROJECT: &str = "crates/cli/pyproject.toml";

/// The wheel of `version` for platform tag `platform` (`manylinux2014_x86_64`, or this machine's
/// `linux_x86_64` for a quick build) from `parts`, into `target/wheels/` (replacing an older
/// one of the same name); its path.
pub fn pack(version: &str, parts: &Parts, platform: &str) -> Result<PathBuf, String> {
    let tree = Path::new("target/dist/wheel-tree").join(platform);
    let _ = std::fs::remove_dir_all(&tree);
    let package = tree.join("looprail");
    crate::copy_files(Path::new(SOURCES), &package)?;
    copy(&parts.module, &package.join("_native.abi3.so"))?;
    let scripts = tree.join(format!("looprail-{version}.data/scripts"));
    copy(&parts.binary, &scripts.join("looprail"))?;
    let info = tree.join(format!("looprail-{version}.dist-info"));
    write(&info.join("METADATA"), &metadata(Path::new("."), version)?)?;
    let tag = format!("cp39-abi3-{platform}");
    write(
        &info.join("WHEEL"),
        &format!("Wheel-Version: 1.0\nGenerator: looprail-xtask\nRoot-Is-Purelib: false\nTag: {tag}\n"),
    )?;
    for license in ["LICENSE-MIT", "LICENSE-APACHE"] {
        copy(Path::new(license), &info.join("licenses").join(license))?;
    }
    let path = Path::new(wheel::OUT).join(format!("looprail-{version}-{tag}.whl"));
    let _ = std::fs::remove_file(&path);
    std::fs::create_dir_all(wheel::OUT).map_err(|e| e.to_string())?;
    wheel::maturin()?;
    run(Command::new(wheel::venv_python()).args(["-m", "wheel", "pack", "-d", wheel::OUT]).arg(&tree))?;
    let _ = std::fs::remove_dir_all(&tree);
    if path.is_file() { Ok(path) } else { Err(format!("`wheel pack` wrote no {}", path.display())) }
}

/// The core metadata (METADATA) from [`PYPROJECT`]'s `[project]` table (under the workspace at
/// `root`), its readme as the description.
fn metadata(root: &Path, version: &str) -> Result<String, String> {
    let pyproject = root.join(PYPROJECT);
    let text = std::fs::read_to_string(&pyproject).map_err(|e| format!("{PYPROJECT}: {e}"))?;
    let manifest: toml::Table = text.parse().map_err(|e| format!("{PYPROJECT}: {e}"))?;
    let project = manifest.get("project").and_then(|p| p.as_table()).ok_or("no [project] table")?;
    let field = |key: &str| project.get(key).and_then(|v| v.as_str()).unwrap_or_default();
    let strings = |key: &str| -> Vec<String> {
        project
            .get(key)
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    };
    let mut lines = vec![
        "Metadata-Version: 2.1".to_owned(),
        format!("Name: {}", field("name")),
        format!("Version: {version}"),
        format!("Summary: {}", field("description")),
        format!("Requires-Python: {}", field("requires-python")),
    ];
    let license = project.get("license").and_then(|l| l.get("text")).and_then(|t| t.as_str());
    lines.extend(license.map(|l| format!("License: {l}")));
    let keywords = strings("keywords");
    if !keywords.is_empty() {
        lines.push(format!("Keywords: {}", keywords.join(",")));
    }
    lines.extend(strings("classifiers").into_iter().map(|c| format!("Classifier: {c}")));
    if let Some(urls) = project.get("urls").and_then(|u| u.as_table()) {
        lines.extend(urls.iter().filter_map(|(k, v)| Some(format!("Project-URL: {k}, {}", v.as_str()?))));
    }
    let readme = pyproject.with_file_name(field("readme"));
    let description = std::fs::read_to_string(&readme).map_err(|e| format!("{}: {e}", readme.display()))?;
    lines.push("Description-Content-Type: text/markdown".to_owned());
    Ok(lines.join("\n") + "\n\n" + &description)
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::copy(from, to).map(|_| ()).map_err(|e| format!("{}: {e}", from.display()))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_metadata_is_the_package_definitions() {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
        let text = super::metadata(root, "9.8.7").unwrap();
        let (headers, description) = text.split_once("\n\n").unwrap();
        for wanted in [
            "Metadata-Version: 2.1",
            "Name: looprail",
            "Version: 9.8.7",
            // The module is abi3 for 3.9 and newer: the wheel may not promise older Pythons.
            "Requires-Python: >=3.9",
            "License: MIT OR Apache-2.0",
            "Description-Content-Type: text/markdown",
        ] {
            assert!(headers.lines().any(|l| l == wanted), "no `{wanted}` in\n{headers}");
        }
        assert!(headers.lines().any(|l| l.starts_with("Summary: Keep LLM agent loops")));
        assert!(description.contains("from looprail import Guard"), "the readme is the description");
    }
}
