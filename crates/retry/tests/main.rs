//! The retry integration tests in one binary (one link instead of one per
//! file): each file beside this one is a module, run as `cargo test --test retry <module>::`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod end_to_end;
mod properties;
mod schedules;
