//! The hook integration tests in one binary (one link instead of one per
//! file): each file beside this one is a module, run as `cargo test --test hook <module>::`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod claude_code;
mod codex_copilot;
mod gemini_cli;
mod properties;
mod qwen_code;
