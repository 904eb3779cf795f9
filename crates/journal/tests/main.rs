//! The journal integration tests in one binary (one link instead of one per
//! file): each file beside this one is a module, run as `cargo test --test journal <module>::`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod child_process;
#[path = "conformance/main.rs"]
mod conformance;
mod crash_resume;
mod delegation;
mod human;
mod operations;
mod schema_race;
mod sqlite_wal;
