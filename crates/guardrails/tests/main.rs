//! The guardrails integration tests in one binary (one link instead of one per
//! file): each file beside this one is a module, run as `cargo test --test guardrails <module>::`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod conformance;
mod degenerate_policy;
mod kit;
mod ladder_memory;
mod per_tool_thresholds;
mod properties;
mod replay_context;
mod replay_timeline;
