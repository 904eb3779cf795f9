//! The compaction integration tests in one binary (one link instead of one per
//! file): each file beside this one is a module, run as `cargo test --test compaction <module>::`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod catalogue;
mod counter_parity;
mod ladder;
mod pairing;
mod trajectories;
