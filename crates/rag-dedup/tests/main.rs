//! The rag-dedup integration tests in one binary (one link instead of one per
//! file): each file beside this one is a module, run as `cargo test --test rag_dedup <module>::`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod dedup_scenarios;
mod properties;
