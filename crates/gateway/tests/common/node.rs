//! The official Node SDKs and agent CLIs the tests drive (Claude Code, Codex, Copilot CLI,
//! Gemini CLI, the SDKs), installed once per target directory at the versions
//! crates/gateway/tests/clients/node/package-lock.json pins. Shared by the gateway's tests, the CLI's hook tests and the
//! in-process guard's Node tests (`#[path]`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The directory holding the agents with the SDKs installed beside them, made once per target
/// directory (again when the lockfile changes); the agents are copied in on every use.
pub fn clients() -> Option<PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        // The workspace's root, from whichever of its crates includes this file.
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let root = manifest.ancestors().find(|p| p.join("Cargo.lock").is_file()).unwrap_or(manifest);
        let source = root.join("crates/gateway/tests/clients/node");
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("node-sdk");
        let found =
            |tool: &str| Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
        if !found("node") || !found("npm") {
            assert!(
                std::env::var_os("CI").is_none(),
                "node and npm are needed for the Node SDK tests under CI"
            );
            eprintln!("skipping the Node SDK tests: no node or npm");
            return None;
        }
        std::fs::create_dir_all(&dir).unwrap();
        let lock = std::fs::read(source.join("package-lock.json")).unwrap();
        // The lockfile of the last install that finished: a failed one is never taken as done.
        let marker = dir.join(".installed-lock");
        let installed = std::fs::read(&marker).ok();
        for entry in std::fs::read_dir(&source).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
        }
        if installed.as_ref() != Some(&lock) || !dir.join("node_modules").is_dir() {
            let _ = std::fs::remove_file(&marker);
            let status = Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                .current_dir(&dir)
                .status()
                .unwrap();
            assert!(status.success(), "installing the Node SDKs (npm ci) failed");
            std::fs::write(&marker, &lock).unwrap();
        }
        Some(dir)
    })
    .clone()
}
