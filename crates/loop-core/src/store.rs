//! The checkpoint seam (F32, F36): where the driver saves the run at safe boundaries, and
//! [`MemoryStore`], an in-process store for tests, simulations and the demo. The durable SQLite
//! store lives in `looprail-journal`.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::engine::RunHeader;
use crate::message::Message;

/// The safe boundary a checkpoint was taken at (S2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointKind {
    /// The user's input was recorded.
    Input,
    /// A model response was recorded.
    LlmResponse,
    /// A tool batch's results were recorded.
    ToolResult,
    /// The context was compacted.
    Compaction,
    /// The run journal was updated.
    JournalUpdate,
    /// The run paused for a human.
    HumanPause,
    /// The run finished.
    Final,
}

impl CheckpointKind {
    /// True when a crashed run whose latest checkpoint is of this kind may be resumed (S2):
    /// `input`, `llm_response`, `tool_result`, `journal_update` (and `compaction`, which is
    /// taken between the same boundaries).
    pub fn allows_resume(self) -> bool {
        matches!(
            self,
            CheckpointKind::Input
                | CheckpointKind::LlmResponse
                | CheckpointKind::ToolResult
                | CheckpointKind::JournalUpdate
                | CheckpointKind::Compaction
        )
    }
}

/// A store failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The store could not be reached or written.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// A stored row could not be decoded.
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
}

/// A checkpoint as loaded back.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredCheckpoint {
    /// Its boundary.
    pub kind: CheckpointKind,
    /// The engine state without the messages.
    pub header: RunHeader,
    /// The conversation at that point.
    pub messages: Vec<Message>,
}

/// Saves and loads run checkpoints. A save is all-or-nothing.
#[async_trait]
pub trait CheckpointStore: Send + Sync {
    /// Saves a checkpoint. `messages` is the whole conversation; a store may write only the
    /// messages past what it already holds (the header's cursor says how many there are).
    async fn save(
        &self,
        run_id: &str,
        kind: CheckpointKind,
        header: &RunHeader,
        messages: &[Message],
    ) -> Result<(), StoreError>;

    /// The latest checkpoint of a run.
    async fn latest(&self, run_id: &str) -> Result<Option<StoredCheckpoint>, StoreError>;
}

/// A checkpoint store in process memory. Nothing survives the process; use it where a
/// crash is simulated by dropping the driver.
#[derive(Debug, Default)]
pub struct MemoryStore {
    runs: Mutex<HashMap<String, StoredCheckpoint>>,
    saves: Mutex<Vec<(String, CheckpointKind)>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every save so far, in order, as (run id, kind).
    pub fn history(&self) -> Vec<(String, CheckpointKind)> {
        self.saves.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

#[async_trait]
impl CheckpointStore for MemoryStore {
    async fn save(
        &self,
        run_id: &str,
        kind: CheckpointKind,
        header: &RunHeader,
        messages: &[Message],
    ) -> Result<(), StoreError> {
        let checkpoint = StoredCheckpoint { kind, header: header.clone(), messages: messages.to_vec() };
        let mut runs = self.runs.lock().map_err(|e| StoreError::Unavailable(e.to_string()))?;
        runs.insert(run_id.to_owned(), checkpoint);
        if let Ok(mut saves) = self.saves.lock() {
            saves.push((run_id.to_owned(), kind));
        }
        Ok(())
    }

    async fn latest(&self, run_id: &str) -> Result<Option<StoredCheckpoint>, StoreError> {
        let runs = self.runs.lock().map_err(|e| StoreError::Unavailable(e.to_string()))?;
        Ok(runs.get(run_id).cloned())
    }
}
