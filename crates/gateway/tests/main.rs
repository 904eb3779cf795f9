//! The gateway integration tests in one binary (one link instead of one per
//! file): each file beside this one is a module, run as `cargo test --test gateway <module>::`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod compaction;
mod decisions;
mod degenerate;
mod faults;
mod hooks;
mod http;
mod repeated_effects;
mod replicas;
mod responses;
mod robustness;
mod save_order;
mod sdk_clients;
mod sdk_clients_node;
mod server_timing;
mod store_outage;
mod stretches;
