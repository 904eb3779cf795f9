//! The cli integration tests in one binary (one link instead of one per
//! file): each file beside this one is a module, run as `cargo test --test cli <module>::`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod audit;
mod audit_compaction;
mod audit_html;
mod chaos;
mod cli_reference;
mod demo;
mod durable;
mod gateway;
#[path = "hook_clis/main.rs"]
mod hook_clis;
mod hook_install;
mod otel;
mod quickstarts;
mod reconnect;
mod run;
mod worker_config;
