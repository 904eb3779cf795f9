//! The official Python SDKs and agent frameworks the tests drive (openai, anthropic, the
//! Agents SDK, LangChain and LangGraph, pydantic-ai) and mypy, installed once per target
//! directory into one venv at the versions crates/gateway/tests/clients/requirements.txt pins
//! (again when that file changes). Shared by the gateway's SDK tests and the in-process guard's
//! Python tests (`#[path]`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The venv's `python`, with the pinned packages installed; `None` (a skip) without python3
/// on a developer's machine, a failure under CI.
pub fn venv() -> Option<PathBuf> {
    static PYTHON: OnceLock<Option<PathBuf>> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            // The workspace's root, from whichever of its crates includes this file.
            let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
            let root = manifest.ancestors().find(|p| p.join("Cargo.lock").is_file()).unwrap_or(manifest);
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sdk-venv");
            let python = dir.join("bin/python");
            let pins = root.join("crates/gateway/tests/clients/requirements.txt");
            let wanted = std::fs::read(&pins).unwrap();
            let installed = std::fs::read(dir.join("requirements.txt")).ok();
            if python.exists() && installed.as_ref() == Some(&wanted) {
                return Some(python);
            }
            if Command::new("python3").arg("--version").output().is_err() {
                assert!(std::env::var_os("CI").is_none(), "python3 is needed for the Python tests under CI");
                eprintln!("skipping the Python tests: no python3");
                return None;
            }
            if !python.exists() {
                let made = Command::new("python3").args(["-m", "venv"]).arg(&dir).status().unwrap();
                assert!(made.success(), "python3 -m venv failed (Debian: apt install python3-venv)");
            }
            let pip = Command::new(dir.join("bin/pip"))
                .args(["install", "-q", "--disable-pip-version-check", "-r"])
                .arg(&pins)
                .status()
                .unwrap();
            assert!(pip.success(), "installing the pinned Python packages failed");
            let ready = Command::new(&python)
                .args(["-c", "import openai, anthropic, agents, langgraph, langchain_openai, langchain, pydantic_ai, mypy"])
                .status()
                .is_ok_and(|s| s.success());
            assert!(ready, "the pinned Python packages do not import");
            std::fs::write(dir.join("requirements.txt"), wanted).unwrap();
            Some(python)
        })
        .clone()
}
