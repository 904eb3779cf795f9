//! The providers integration tests in one binary (one link instead of one per
//! file): each file beside this one is a module, run as `cargo test --test providers <module>::`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod anthropic;
mod call_ids;
mod openai;
mod record_replay;
mod shared_wire;
mod stream_robustness;
