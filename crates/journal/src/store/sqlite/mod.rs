//! [`SqliteStore`]: the embedded run store (one file, WAL): runs and lanes, messages,
//! checkpoints, the tool-call envelope, journals, heartbeats, cancel requests and the
//! reconciler.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use looprail_loop_core::engine::RunHeader;
use looprail_loop_core::message::{Message, ToolCall, ToolResult};
use looprail_loop_core::store::{CheckpointKind, StoredCheckpoint};
use sqlx::sqlite::SqliteConnection;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteQueryResult, SqliteSynchronous,
};
use sqlx::{ConnectOptions, SqlitePool};

use super::api::default_worker_name;
use super::common::{CheckpointPlan, parse_kind};
use super::types::{JournalSwap, ReconcileReport, RunRow, RunSpec, RunStatus, ToolCallRow, now_ms};
use crate::error::JournalError;

mod checkpoints;
mod journals;
mod run_store;
mod runs;
pub(crate) mod schema;
mod tool_calls;

/// The SQLite run store.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    /// The one connection journals are written through (see [`SqliteStore::open_with`]);
    /// `None` once closed.
    journal_writer: Arc<tokio::sync::Mutex<Option<SqliteConnection>>>,
    /// The write-ahead log's checkpoints, run beside the journals' writes (see
    /// [`SqliteStore::open_with`]).
    checkpoints: Arc<Checkpoints>,
    busy_ms: u64,
    worker: String,
}

/// Journal writes between two checkpoints of the write-ahead log. A gateway's save writes a few
/// pages, so this is about SQLite's own 1,000 pages between automatic checkpoints.
const WRITES_PER_CHECKPOINT: u32 = 256;

/// The log's size (pages) at which the journals' writer checkpoints it itself: four times
/// SQLite's default, reached only when writes come without a pause.
const BACKSTOP_PAGES: &str = "4000";

/// Counts the journals' writes and starts a checkpoint every [`WRITES_PER_CHECKPOINT`].
#[derive(Debug, Default)]
struct Checkpoints {
    writes: AtomicU32,
    running: AtomicBool,
}

/// `Ok` when an update touched a row; `UnknownRun` naming `what` when it touched none.
fn touched(done: &SqliteQueryResult, what: impl FnOnce() -> String) -> Result<(), JournalError> {
    if done.rows_affected() == 0 { Err(JournalError::UnknownRun(what())) } else { Ok(()) }
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
            // A connection to a local file does not go stale: no ping before each use (it cost
            // a round trip to the connection's thread per statement).
            let pool_options = SqlitePoolOptions::new().max_connections(4).test_before_acquire(false);
            match pool_options.connect_with(options.clone()).await {
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
        // Journals (a gateway's conversation states, written with every answer) go through one
        // connection of their own, held rather than pooled. SQLite drops a connection's page
        // cache whenever another connection changed the file since its last statement: with the
        // pool's connections taking turns, every save read its pages again (8-9 reads per save
        // at one request at a time on the gateway). And a pooled connection is pinged on its
        // thread each time it goes back to the pool: a second round trip per save.
        //
        // That connection leaves the write-ahead log's checkpoints to others: SQLite runs an
        // automatic checkpoint inside the commit that fills the log, which then waits for two
        // fsyncs (15-20 ms on the peers bench's VM), and a gateway's next request of a
        // conversation waits for that conversation's save. A pooled connection checkpoints
        // instead, beside the writes, every `WRITES_PER_CHECKPOINT` journal writes (a passive
        // checkpoint does not stop a writer). Under writes without a pause the log cannot
        // start over (each checkpoint ends behind the newest write), so the writer still
        // checkpoints itself once the log reaches `BACKSTOP_PAGES`: the log stays bounded.
        let journal_writer = options
            .clone()
            .pragma("wal_autocheckpoint", BACKSTOP_PAGES)
            .connect()
            .await
            .map_err(|e| JournalError::from_sqlx(e, busy_ms))?;
        let journal_writer = Arc::new(tokio::sync::Mutex::new(Some(journal_writer)));
        Ok(Self { pool, journal_writer, checkpoints: Arc::default(), busy_ms, worker: default_worker_name() })
    }

    fn db(&self) -> impl Fn(sqlx::Error) -> JournalError + '_ {
        move |e| JournalError::from_sqlx(e, self.busy_ms)
    }

    /// The same store, claiming runs under the name `worker` (shown by `looprail runs`).
    #[must_use]
    pub fn with_worker(mut self, worker: impl Into<String>) -> Self {
        self.worker = worker.into();
        self
    }

    /// The pool, for tests and tools that inspect the file.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Closes every connection to the file (the pool's and the journals' writer), waiting for
    /// the statements running; the store then answers every call with an error.
    pub async fn close(&self) {
        self.pool.close().await;
        if let Some(writer) = self.journal_writer.lock().await.take() {
            let _ = sqlx::Connection::close(writer).await;
        }
    }

    /// Starts a passive checkpoint of the write-ahead log on a pooled connection, unless one is
    /// running; nothing waits for it (a failed one leaves the log to the next).
    fn checkpoint_behind(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        if self.checkpoints.running.swap(true, Ordering::AcqRel) {
            return;
        }
        let (pool, checkpoints) = (self.pool.clone(), Arc::clone(&self.checkpoints));
        runtime.spawn(async move {
            if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)").execute(&pool).await {
                tracing::debug!(error = %e, "write-ahead log checkpoint failed; the next one retries");
            }
            checkpoints.running.store(false, Ordering::Release);
        });
    }

    /// The journals' writer connection, held until the guard drops (an error once closed).
    /// Each call counts as one journal write toward the next checkpoint behind the writes.
    async fn journal_writer(
        &self,
    ) -> Result<tokio::sync::MappedMutexGuard<'_, SqliteConnection>, JournalError> {
        let written = self.checkpoints.writes.fetch_add(1, Ordering::Relaxed);
        if written % WRITES_PER_CHECKPOINT == WRITES_PER_CHECKPOINT - 1 {
            self.checkpoint_behind();
        }
        let held = self.journal_writer.lock().await;
        tokio::sync::MutexGuard::try_map(held, Option::as_mut)
            .map_err(|_| JournalError::from_sqlx(sqlx::Error::PoolClosed, self.busy_ms))
    }
}
