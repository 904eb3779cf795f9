//! Retries, idempotency-aware tool retry and model fallback chains for looprail.
//!
//! **Status: skeleton.** This crate will provide [`looprail_loop_core::provider::Provider`]
//! wrappers in the style of tower layers (`Retry<FallbackChain<..>>`, F21, F23) and a tool
//! executor that retries only transient failures of idempotent tools (F22). It is tracked by
//! issue 4; nothing here is implemented yet.
