//! looprail's hooks inside the real coding CLIs, each the npm release pinned in
//! crates/gateway/tests/clients/node/package-lock.json, run against a local fake model API: a
//! model that loops is nudged, denied or asked, and stopped through the hooks, and the CLI exits
//! cleanly; a healthy session of 100 distinct calls is never touched. One test binary for all
//! five agents (each module one agent).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../gateway/tests/common/node.rs"]
mod node;

mod chat_model;
mod claude_code;
mod codex;
mod copilot;
mod gemini_cli;
mod qwen_code;

/// A temporary directory (the agent's home, the hook store) and the project folder in it.
fn project() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("project");
    std::fs::create_dir_all(&work).unwrap();
    (dir, work)
}
