//! Helpers for the journal tests: temporary databases, a provider that answers by turn (so a
//! resumed run is answered as the original was) and can block at a chosen turn, and tools that
//! count their effects and can hang mid-call.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use looprail_loop_core::prelude::*;
use looprail_loop_core::tool::{ToolContext, ToolOutput};
use tokio::sync::Notify;

/// A SQLite file's path in a directory of its own, removed with the file and its `-wal` and
/// `-shm` companions when this is dropped (a test leaves nothing behind).
#[derive(Debug)]
pub struct TempDb {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for TempDb {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TempDb {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

pub fn temp_db(name: &str) -> TempDb {
    let dir = tempfile::Builder::new().prefix(&format!("looprail-{name}-")).tempdir().unwrap();
    TempDb { path: dir.path().join("runs.db"), _dir: dir }
}

/// Answers turn n (counted by the assistant messages already in the request) with script[n].
pub struct ByTurn {
    pub script: Vec<ModelResponse>,
    /// Turn at which `complete` never returns (a crash while waiting on the model).
    pub block_at: Option<usize>,
    pub blocked: Arc<Notify>,
}

impl ByTurn {
    pub fn new(script: Vec<ModelResponse>) -> Self {
        Self { script, block_at: None, blocked: Arc::new(Notify::new()) }
    }
}

#[async_trait]
impl Provider for ByTurn {
    fn model(&self) -> &str {
        "by-turn"
    }
    async fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelResponse, ProviderError> {
        let turn = request.messages.iter().filter(|m| m.role == Role::Assistant && !m.is_internal()).count();
        if self.block_at == Some(turn) {
            self.blocked.notify_one();
            std::future::pending::<()>().await;
        }
        Ok(self
            .script
            .get(turn)
            .cloned()
            .unwrap_or_else(|| ModelResponse::text("by-turn", "all done"))
            .with_usage(10, 5))
    }
}

/// Effects performed, per call id, shared across "processes".
#[derive(Clone, Default)]
pub struct Effects(Arc<Mutex<HashMap<String, u32>>>);

impl Effects {
    pub fn count(&self, call_id: &str) -> u32 {
        self.0.lock().unwrap().get(call_id).copied().unwrap_or(0)
    }
    fn record(&self, call_id: &str) {
        *self.0.lock().unwrap().entry(call_id.to_owned()).or_default() += 1;
    }
}

/// A tool that performs its effect (counted) and, for the chosen call, then hangs forever
/// (the process dies between "started" and "completed").
pub struct EffectTool {
    pub name: &'static str,
    pub idempotent: bool,
    pub effects: Effects,
    pub hang_on: Option<String>,
    pub hanging: Arc<Notify>,
    pub calls: Arc<AtomicU32>,
}

impl EffectTool {
    pub fn new(name: &'static str, idempotent: bool, effects: Effects) -> Self {
        Self {
            name,
            idempotent,
            effects,
            hang_on: None,
            hanging: Arc::new(Notify::new()),
            calls: Arc::new(AtomicU32::new(0)),
        }
    }
}

#[async_trait]
impl Tool for EffectTool {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(self.name, "has an effect", serde_json::json!({"type": "object"}))
    }
    fn idempotent(&self) -> bool {
        self.idempotent
    }
    async fn call(&self, args: serde_json::Value, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        // The scripted call's name travels in its arguments: the engine gives calls its own
        // ids (`lr-N`), whatever id the script used.
        let tag = args.get("tag").and_then(serde_json::Value::as_str).unwrap_or_default().to_owned();
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.effects.record(&tag);
        if self.hang_on.as_deref() == Some(tag.as_str()) {
            self.hanging.notify_one();
            std::future::pending::<()>().await;
        }
        Ok(format!("{} done", self.name).into())
    }
}

pub fn calls(id: &str, name: &str) -> ModelResponse {
    ModelResponse::tool_calls(
        "by-turn",
        vec![ToolCall::new(id, name, serde_json::json!({ "tag": id }).to_string())],
    )
}

/// Makes every run's heartbeat old, as it is when a crashed process is looked at later.
pub async fn age_heartbeats(store: &looprail_journal::SqliteStore) {
    sqlx::query("UPDATE runs SET heartbeat_at = 0").execute(store.pool()).await.unwrap();
}
