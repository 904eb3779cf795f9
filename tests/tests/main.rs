//! The tests integration tests in one binary (one link instead of one per
//! file): each file beside this one is a module, run as `cargo test --test scenarios <module>::`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod audit_limits;
mod bounded_waits;
mod degenerate_replies;
mod degenerate_stream;
mod doc_links;
mod guardrails_trajectories;
mod in_process_guard;
mod journal_after_summary;
mod loop_properties;
mod loop_resume;
mod loop_scenarios;
mod telemetry_spans;
mod test_layout;
mod usage_estimate;
