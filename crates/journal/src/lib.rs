//! Durable runs for looprail: checkpoints, the idempotency envelope, resume, lanes and the run
//! journal.
//!
//! **Status: skeleton.** This crate will implement the run store behind
//! [`looprail_loop_core::store::CheckpointStore`] on SQLite (F31–F37), crash-safe resume and the
//! run journal tools. It is tracked by issue 8; nothing here is implemented yet.
