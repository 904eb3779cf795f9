//! [`RagDedup`]: the shared map, a tool wrapper that dedups any retrieval tool, the guard that
//! saves the map with the run, and citations for the final answer.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use serde_json::Value;

use looprail_loop_core::event::Event;
use looprail_loop_core::finalize::{Citation, CitationSource};
use looprail_loop_core::guard::{Guard, GuardStateError};
use looprail_loop_core::tool::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};

use crate::chunk::Chunk;
use crate::seen::{Filtered, SavedSeen, SeenChunks, ShownChunk};

/// The default number of chunks remembered per conversation.
pub const DEFAULT_CAPACITY: usize = 10_000;

/// One conversation's dedup map, shared by its retrieval tools, its state guard and its
/// finaliser. Make a new one for each new conversation.
#[derive(Debug, Clone)]
pub struct RagDedup {
    seen: Arc<Mutex<SeenChunks>>,
}

impl Default for RagDedup {
    fn default() -> Self {
        Self::new(DEFAULT_CAPACITY)
    }
}

impl RagDedup {
    /// A fresh map remembering at most `capacity` chunks.
    pub fn new(capacity: usize) -> Self {
        Self { seen: Arc::new(Mutex::new(SeenChunks::new(capacity))) }
    }

    fn lock(&self) -> MutexGuard<'_, SeenChunks> {
        // A panic elsewhere cannot corrupt the map mid-update in a way that matters here.
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Passes one retrieval result through the map.
    pub fn filter<'a>(&self, call_id: &str, chunks: &'a [Chunk]) -> Filtered<'a> {
        self.lock().filter(call_id, chunks)
    }

    /// The deduplicated context shown to the model so far.
    pub fn context(&self) -> Vec<ShownChunk> {
        self.lock().context()
    }

    /// Duplicates dropped so far.
    pub fn duplicates_total(&self) -> u64 {
        self.lock().duplicates_total()
    }

    /// Wraps a retrieval tool so its results are deduplicated.
    pub fn wrap<T: Tool>(&self, tool: T) -> DedupTool<T> {
        DedupTool { inner: tool, dedup: self.clone() }
    }

    /// The guard that saves this map with the run (add it to the run's guards).
    pub fn state_guard(&self) -> DedupState {
        DedupState { dedup: self.clone() }
    }
}

impl CitationSource for RagDedup {
    fn citations(&self, text: &str) -> Vec<Citation> {
        self.lock().citations(text)
    }
}

/// Reads chunks from a tool's output: a JSON array of chunks or `{"chunks": [...]}`.
pub fn parse_chunks(output: &str) -> Option<Vec<Chunk>> {
    let value: Value = serde_json::from_str(output.trim()).ok()?;
    let list = match value {
        Value::Array(items) => items,
        Value::Object(mut map) => match map.remove("chunks") {
            Some(Value::Array(items)) => items,
            _ => return None,
        },
        _ => return None,
    };
    list.into_iter().map(|item| serde_json::from_value(item).ok()).collect()
}

/// Renders kept chunks for the model, each under its `[n]` label.
pub fn render(filtered: &Filtered<'_>) -> String {
    if filtered.kept.is_empty() {
        return format!(
            "No new passages: all {} results were already shown earlier in this conversation. \
             Use what you already have.",
            filtered.duplicates
        );
    }
    let mut out = String::new();
    for (ref_id, chunk) in &filtered.kept {
        out.push_str(&format!("[{ref_id}] "));
        if let Some(source) = &chunk.source {
            out.push_str(&format!("({source}) "));
        }
        out.push_str(chunk.text.trim());
        out.push_str("\n\n");
    }
    out.push_str("Cite passages by their [n] labels.");
    if filtered.duplicates > 0 {
        out.push_str(&format!(" {} passage(s) you already saw were left out.", filtered.duplicates));
    }
    out
}

/// A retrieval tool whose chunks go through the conversation's dedup map. Output that is not a
/// list of chunks passes through unchanged.
#[derive(Debug, Clone)]
pub struct DedupTool<T> {
    inner: T,
    dedup: RagDedup,
}

#[async_trait]
impl<T: Tool> Tool for DedupTool<T> {
    fn definition(&self) -> ToolDefinition {
        self.inner.definition()
    }

    fn idempotent(&self) -> bool {
        self.inner.idempotent()
    }

    async fn call(&self, args: Value, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let call_id = cx.call_id.clone();
        let events = cx.events.clone();
        let output = self.inner.call(args, cx).await?;
        let Some(chunks) = parse_chunks(&output.content) else { return Ok(output) };
        let filtered = self.dedup.filter(&call_id, &chunks);
        events.emit(&Event::ChunksDeduplicated {
            call_id,
            kept: u32::try_from(filtered.kept.len()).unwrap_or(u32::MAX),
            duplicates: filtered.duplicates,
        });
        Ok(ToolOutput::from(render(&filtered)))
    }
}

/// Saves the dedup map in the run's checkpoints (F36) and restores it on resume.
#[derive(Debug, Clone)]
pub struct DedupState {
    dedup: RagDedup,
}

impl Guard for DedupState {
    fn name(&self) -> &str {
        "rag_dedup"
    }

    fn save_state(&self) -> Value {
        serde_json::to_value(self.dedup.lock().save()).unwrap_or_default()
    }

    fn load_state(&mut self, state: Value) -> Result<(), GuardStateError> {
        let saved: SavedSeen =
            serde_json::from_value(state).map_err(|e| GuardStateError::from_serde("rag_dedup", e))?;
        let restored = SeenChunks::restore(saved).map_err(|e| GuardStateError::from_serde("rag_dedup", e))?;
        *self.dedup.lock() = restored;
        Ok(())
    }
}
