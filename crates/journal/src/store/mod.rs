//! [`SqliteStore`]: the embedded run store (one file, WAL): runs and lanes, messages,
//! checkpoints, the tool-call envelope, journals, heartbeats, cancel requests and the
//! reconciler.

use std::path::Path;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use looprail_loop_core::engine::RunHeader;
use looprail_loop_core::message::{Message, ToolCall, ToolResult};
use looprail_loop_core::store::{CheckpointKind, CheckpointStore, StoreError, StoredCheckpoint};
use serde::{Deserialize, Serialize};
use sqlx::SqlitePool;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteQueryResult, SqliteSynchronous,
};

use crate::error::JournalError;
use crate::schema;

mod checkpoints;
mod journals;
mod runs;
mod tool_calls;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Where a run is, as the store records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Waiting for its lane.
    Queued,
    /// Executing.
    Running,
    /// Paused for a human.
    WaitingOnHuman,
    /// Finished by the model.
    Completed,
    /// Ended by a limit or an error.
    Failed,
    /// Cancelled.
    Cancelled,
    /// Its heartbeat went stale (a crash) or a time limit ended it.
    TimedOut,
    /// Stopped at a safe boundary by a shutdown (SIGINT, SIGTERM); resumable.
    Interrupted,
}

impl RunStatus {
    /// The stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Running => "running",
            RunStatus::WaitingOnHuman => "waiting_on_human",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::TimedOut => "timed_out",
            RunStatus::Interrupted => "interrupted",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "queued" => RunStatus::Queued,
            "running" => RunStatus::Running,
            "waiting_on_human" => RunStatus::WaitingOnHuman,
            "completed" => RunStatus::Completed,
            "failed" => RunStatus::Failed,
            "cancelled" => RunStatus::Cancelled,
            "timed_out" => RunStatus::TimedOut,
            "interrupted" => RunStatus::Interrupted,
            _ => return None,
        })
    }

    /// True for states a lane waits on (the run still holds it).
    pub fn holds_lane(self) -> bool {
        matches!(self, RunStatus::Running | RunStatus::WaitingOnHuman)
    }

    /// True for runs that ended for good: completed, failed, cancelled (and timed out, unless
    /// the reconciler flagged the run resumable).
    pub fn is_final(self) -> bool {
        matches!(self, RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled | RunStatus::TimedOut)
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A run as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunRow {
    /// The run.
    pub run_id: String,
    /// Its lane (`conversation:<id>`).
    pub lane: String,
    /// The run that delegated it, if any.
    pub parent_run_id: Option<String>,
    /// Delegation depth.
    pub depth: i64,
    /// The user message that started it.
    pub input: String,
    /// Its status.
    pub status: RunStatus,
    /// Submission order.
    pub seq: i64,
    /// Last heartbeat (ms since epoch).
    pub heartbeat_at: Option<i64>,
    /// When cancellation was requested.
    pub cancel_requested_at: Option<i64>,
    /// True when the reconciler found it resumable.
    pub resume_available: bool,
    /// What executes it, as its submitter stored it (see [`RunSpec::recipe`]).
    pub recipe: Option<serde_json::Value>,
}

/// A new run for [`SqliteStore::submit`].
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// A unique id.
    pub run_id: String,
    /// The lane; one active run per lane.
    pub lane: String,
    /// The user's message.
    pub input: String,
    /// The delegating run, for child runs (which get their own lane).
    pub parent_run_id: Option<String>,
    /// Delegation depth.
    pub depth: u32,
    /// Everything another process needs to execute the run as submitted (provider, model,
    /// base URL, tools, work directory, config), as the submitter defines it; never secrets.
    /// Opaque to the store.
    pub recipe: Option<serde_json::Value>,
}

impl RunSpec {
    /// The same run with the recipe its executor needs.
    #[must_use]
    pub fn with_recipe(mut self, recipe: serde_json::Value) -> Self {
        self.recipe = Some(recipe);
        self
    }

    /// A top-level run in the lane of `conversation`.
    pub fn new(run_id: impl Into<String>, conversation: &str, input: impl Into<String>) -> Self {
        Self {
            run_id: run_id.into(),
            lane: format!("conversation:{conversation}"),
            input: input.into(),
            parent_run_id: None,
            depth: 0,
            recipe: None,
        }
    }
}

/// What [`SqliteStore::submit`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Submitted {
    /// The lane was free: the run is now running.
    Started,
    /// The lane is busy: the run waits behind `ahead` others.
    Queued {
        /// Runs before it.
        ahead: i64,
        /// An older queued run this submission started because the lane was free: the caller
        /// must execute it (and the lane after it).
        dispatched: Option<String>,
    },
}

/// A tool-call envelope row (F34).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallRow {
    /// The tool.
    pub tool: String,
    /// When it started (ms).
    pub started_at: i64,
    /// Its result, once completed.
    pub completed: Option<ToolResult>,
}

/// What a reconcile pass did (F33).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ReconcileReport {
    /// Running runs whose heartbeat went stale, now `timed_out`.
    pub timed_out: u64,
    /// Of those, how many may be resumed.
    pub resumable: u64,
    /// Runs waiting on a human whose cancel request expired, now `cancelled`.
    pub cancelled: u64,
    /// Lanes whose next queued run is due (no run holds the lane); a worker starts them.
    pub due: u64,
}

/// The SQLite run store.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    busy_ms: u64,
}

fn hash(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// `Ok` when an update touched a row; `UnknownRun` naming `what` when it touched none.
fn touched(done: &SqliteQueryResult, what: impl FnOnce() -> String) -> Result<(), JournalError> {
    if done.rows_affected() == 0 { Err(JournalError::UnknownRun(what())) } else { Ok(()) }
}

fn kind_name(kind: CheckpointKind) -> Result<String, JournalError> {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .ok_or_else(|| JournalError::corrupt("checkpoint kind", "unnamed kind"))
}

impl SqliteStore {
    /// Opens (or creates) the store at `path`, applying migrations; waits up to 5 s for a lock.
    pub async fn open(path: &Path) -> Result<Self, JournalError> {
        Self::open_with(path, Duration::from_secs(5)).await
    }

    /// Opens a store that must already exist: a mistyped path is [`JournalError::NoStore`],
    /// never a fresh empty database (for commands that read or change existing runs).
    pub async fn open_existing(path: &Path) -> Result<Self, JournalError> {
        if !path.is_file() {
            return Err(JournalError::NoStore(path.display().to_string()));
        }
        Self::open(path).await
    }

    /// Opens with a chosen busy timeout (how long a locked database is retried).
    pub async fn open_with(path: &Path, busy_timeout: Duration) -> Result<Self, JournalError> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(busy_timeout);
        let busy_ms = busy_timeout.as_millis() as u64;
        // Switching a fresh file to WAL can meet another opener doing the same; SQLite then
        // answers "busy" without waiting, so the connect itself is retried within the timeout.
        let deadline = tokio::time::Instant::now() + busy_timeout;
        let pool = loop {
            match SqlitePoolOptions::new().max_connections(4).connect_with(options.clone()).await {
                Ok(pool) => break pool,
                Err(e) => match JournalError::from_sqlx(e, busy_ms) {
                    JournalError::Locked { .. } if tokio::time::Instant::now() < deadline => {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    other => return Err(other),
                },
            }
        };
        schema::migrate(&pool, busy_ms).await?;
        Ok(Self { pool, busy_ms })
    }

    fn db(&self) -> impl Fn(sqlx::Error) -> JournalError + '_ {
        move |e| JournalError::from_sqlx(e, self.busy_ms)
    }

    /// The pool, for tests and tools that inspect the file.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }
}

#[async_trait]
impl CheckpointStore for SqliteStore {
    async fn save(
        &self,
        run_id: &str,
        kind: CheckpointKind,
        header: &RunHeader,
        messages: &[Message],
    ) -> Result<(), StoreError> {
        self.save_checkpoint(run_id, kind, header, messages).await.map_err(StoreError::from)
    }

    async fn latest(&self, run_id: &str) -> Result<Option<StoredCheckpoint>, StoreError> {
        self.load_checkpoint(run_id, false).await.map_err(StoreError::from)
    }
}
