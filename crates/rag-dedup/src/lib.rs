//! Conversation-scoped RAG chunk dedup and citations for looprail.
//!
//! The same passage often comes back from retrieval turn after turn. [`RagDedup`] remembers
//! every chunk shown to the model in a conversation, keyed by (vector store, file, chunk
//! index), and drops it from later results (counted as a duplicate, reported as
//! `agent.rag.dedup`). Kept chunks are shown under conversation-wide `[n]` labels; citations are
//! built from those labels in the answer, so a dropped duplicate never yields a citation of its
//! own and a chunk the model never saw is never cited. The map is saved with the run through
//! [`RagDedup::state_guard`], and a new conversation starts with a new, empty map.
//!
//! ```
//! use looprail_rag_dedup::{Chunk, RagDedup};
//! use looprail_loop_core::finalize::CitationSource;
//!
//! let dedup = RagDedup::default();
//! let result = [Chunk::new("vs1", "handbook.pdf", 4, "Refunds take 5 days.")];
//! let first = dedup.filter("call_1", &result);
//! assert_eq!(first.kept.len(), 1);
//!
//! // A follow-up query lands on the same passage and one new one.
//! let result = [
//!     Chunk::new("vs1", "handbook.pdf", 4, "Refunds take 5 days."),
//!     Chunk::new("vs1", "handbook.pdf", 5, "Exchanges are free."),
//! ];
//! let second = dedup.filter("call_2", &result);
//! assert_eq!((second.kept.len(), second.duplicates), (1, 1));
//!
//! let citations = dedup.citations("Refunds take 5 days [1]; exchanges are free [2].");
//! assert_eq!(citations.iter().map(|c| c.chunk_index).collect::<Vec<_>>(), [4, 5]);
//! ```

mod chunk;
mod dedup;
mod interner;
mod seen;

pub use chunk::{Chunk, ChunkKey};
pub use dedup::{DEFAULT_CAPACITY, DedupState, DedupTool, RagDedup, parse_chunks, render};
pub use interner::Interner;
pub use seen::{Filtered, SavedChunk, SavedSeen, SeenChunks, ShownChunk};
