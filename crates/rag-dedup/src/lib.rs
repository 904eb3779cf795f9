//! Conversation-scoped RAG chunk dedup and citations for looprail.
//!
//! **Status: skeleton.** This crate will hold the seen map keyed by
//! (vector_store_id, file_id, chunk_index) that drops chunks the model already saw and builds
//! citations only for chunks it did see (F30). It is tracked by issue 7; nothing here is
//! implemented yet.
