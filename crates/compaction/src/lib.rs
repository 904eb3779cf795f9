//! Token counting, context compaction and the recovery ladder for looprail.
//!
//! **Status: skeleton.** This crate will provide a tiktoken-based
//! [`looprail_loop_core::context::TokenCounter`] with per-message caching (F29, B6) and
//! [`looprail_loop_core::context::ContextPolicy`] strategies: sliding-window trim (F25), simple
//! compaction (F26), auto-compaction at 70% of the context window (F27) and the R1/R2/R3 recovery
//! ladder (F28). It is tracked by issue 6; nothing here is implemented yet.
