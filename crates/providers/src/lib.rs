//! OpenAI Chat Completions and Anthropic Messages clients for looprail.
//!
//! **Status: skeleton.** This crate will implement [`looprail_loop_core::provider::Provider`]
//! for the OpenAI Chat Completions API (and OpenAI-compatible servers) and the Anthropic
//! Messages API, complete and streaming (F24, F39), plus a record/replay provider. It is tracked
//! by issue 3; until then the scripted provider in `looprail-loop-core` (feature `testkit`)
//! is the only provider.
