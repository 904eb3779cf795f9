//! [`PostgresStore`]: the run store on PostgreSQL, for many workers on many hosts.
//!
//! The database enforces what the workers rely on: a unique partial index allows one active
//! run per lane; claims are single conditional statements (a lane's oldest queued run is
//! locked `FOR UPDATE`, so its order holds; a take-over picks among stopped runs `FOR UPDATE
//! SKIP LOCKED`), so concurrent workers never take the same run; a checkpoint
//! or a tool call's start locks its run row and is refused when another worker holds the run
//! (fencing a worker that lost its lease). Workers find new runs by polling (the worker's
//! `--poll-ms`), not LISTEN/NOTIFY.

use std::time::Duration;

use looprail_loop_core::engine::RunHeader;
use looprail_loop_core::message::{Message, ToolCall, ToolResult};
use looprail_loop_core::store::{CheckpointKind, StoredCheckpoint};
use sqlx::postgres::{PgPool, PgPoolOptions, PgQueryResult};

use super::api::default_worker_name;
use super::common::{CheckpointPlan, parse_kind};
use super::types::{JournalSwap, ReconcileReport, RunRow, RunSpec, RunStatus, ToolCallRow, now_ms};
use crate::error::JournalError;

mod data;
mod run_store;
mod runs;
pub(crate) mod schema;

/// The PostgreSQL run store. Cloning shares the connection pool.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
    worker: String,
}

/// `Ok` when an update touched a row; `UnknownRun` naming `what` when it touched none.
fn touched(done: &PgQueryResult, what: impl FnOnce() -> String) -> Result<(), JournalError> {
    if done.rows_affected() == 0 { Err(JournalError::UnknownRun(what())) } else { Ok(()) }
}

fn db(error: sqlx::Error) -> JournalError {
    JournalError::Database(error.to_string())
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user@host:port/db`) and applies the
    /// missing migrations (safe when several workers start at once). Connections are
    /// re-established by the pool after a loss; an operation that meets a dead connection
    /// fails with [`JournalError::Database`] and the caller retries it.
    pub async fn connect(url: &str) -> Result<Self, JournalError> {
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(Duration::from_secs(10))
            .connect(url)
            .await
            .map_err(|e| JournalError::Database(format!("cannot connect to PostgreSQL: {e}")))?;
        schema::migrate(&pool).await?;
        Ok(Self { pool, worker: default_worker_name() })
    }

    /// The same store, claiming runs under the name `worker` (shown by `looprail runs`).
    #[must_use]
    pub fn with_worker(mut self, worker: impl Into<String>) -> Self {
        self.worker = worker.into();
        self
    }

    /// The pool, for tests and tools that inspect the database.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}
