//! The audit integration tests in one binary (one link instead of one per
//! file): each file beside this one is a module, run as `cargo test --test audit <module>::`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod degenerate_replies;
mod recorded_limits;
mod skipped_lines;
