//! Retrieved chunks and their identity (F30).

use serde::{Deserialize, Serialize};

/// One retrieved passage, as a retrieval tool returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// The vector store it came from.
    pub vector_store_id: String,
    /// The file within the store.
    pub file_id: String,
    /// Its index within the file.
    pub chunk_index: u32,
    /// The passage.
    pub text: String,
    /// A URL or title, for citations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The retrieval score; it does not take part in identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
}

impl Chunk {
    /// A chunk from its identity and text.
    pub fn new(
        store: impl Into<String>,
        file: impl Into<String>,
        index: u32,
        text: impl Into<String>,
    ) -> Self {
        Self {
            vector_store_id: store.into(),
            file_id: file.into(),
            chunk_index: index,
            text: text.into(),
            source: None,
            score: None,
        }
    }
}

/// A chunk's identity with its ids interned: 12 bytes, no strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ChunkKey {
    /// Interned vector-store id.
    pub store: u32,
    /// Interned file id.
    pub file: u32,
    /// Chunk index within the file.
    pub index: u32,
}
