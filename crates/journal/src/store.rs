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
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteQueryResult, SqliteSynchronous,
};
use sqlx::{Row, SqlitePool};

use crate::error::JournalError;
use crate::schema;

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
}

impl RunSpec {
    /// A top-level run in the lane of `conversation`.
    pub fn new(run_id: impl Into<String>, conversation: &str, input: impl Into<String>) -> Self {
        Self {
            run_id: run_id.into(),
            lane: format!("conversation:{conversation}"),
            input: input.into(),
            parent_run_id: None,
            depth: 0,
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
    /// Queued runs started because their lane was free.
    pub dispatched: u64,
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

    // ---- runs and lanes (F31) ----

    /// Records a run; starts it when its lane is free, queues it otherwise.
    pub async fn submit(&self, spec: &RunSpec) -> Result<Submitted, JournalError> {
        let now = now_ms();
        sqlx::query(
            "INSERT INTO runs (run_id, lane, parent_run_id, depth, input, status, seq, created_at, updated_at)
             VALUES (?, ?, ?, ?, ?, 'queued', (SELECT COALESCE(MAX(seq), 0) + 1 FROM runs), ?, ?)",
        )
        .bind(&spec.run_id)
        .bind(&spec.lane)
        .bind(&spec.parent_run_id)
        .bind(i64::from(spec.depth))
        .bind(&spec.input)
        .bind(now)
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(self.db())?;
        let dispatched = match self.claim_next(&spec.lane).await? {
            Some(claimed) if claimed == spec.run_id => return Ok(Submitted::Started),
            other => other,
        };
        let row = sqlx::query(
            "SELECT COUNT(*) AS n FROM runs WHERE lane = ? AND status = 'queued' AND seq < (SELECT seq FROM runs WHERE run_id = ?)",
        )
        .bind(&spec.lane)
        .bind(&spec.run_id)
        .fetch_one(&self.pool)
        .await
        .map_err(self.db())?;
        Ok(Submitted::Queued {
            ahead: row.try_get("n").map_err(|e| JournalError::corrupt("runs", e))?,
            dispatched,
        })
    }

    /// Starts the oldest queued run of `lane` if no run holds it; returns its id. One statement,
    /// so two workers can never both start a run in one lane.
    pub async fn claim_next(&self, lane: &str) -> Result<Option<String>, JournalError> {
        let now = now_ms();
        let row = sqlx::query(
            "UPDATE runs SET status = 'running', updated_at = ?, heartbeat_at = ?
             WHERE run_id = (SELECT run_id FROM runs WHERE lane = ? AND status = 'queued' ORDER BY seq LIMIT 1)
               AND NOT EXISTS (SELECT 1 FROM runs WHERE lane = ? AND status IN ('running', 'waiting_on_human'))
             RETURNING run_id",
        )
        .bind(now)
        .bind(now)
        .bind(lane)
        .bind(lane)
        .fetch_optional(&self.pool)
        .await
        .map_err(self.db())?;
        row.map(|r| r.try_get::<String, _>("run_id").map_err(|e| JournalError::corrupt("runs", e)))
            .transpose()
    }

    /// Sets a run's status.
    pub async fn set_status(&self, run_id: &str, status: RunStatus) -> Result<(), JournalError> {
        // An interrupted run is offered for resume; a run that runs again, or ended, is not.
        let resumable = match status {
            RunStatus::Interrupted => Some(1_i64),
            RunStatus::Queued | RunStatus::WaitingOnHuman | RunStatus::TimedOut => None,
            _ => Some(0),
        };
        let done = sqlx::query(
            "UPDATE runs SET status = ?, resume_available = COALESCE(?, resume_available), updated_at = ?
             WHERE run_id = ?",
        )
        .bind(status.as_str())
        .bind(resumable)
        .bind(now_ms())
        .bind(run_id)
        .execute(&self.pool)
        .await
        .map_err(self.db())?;
        touched(&done, || run_id.to_owned())
    }

    /// Moves a run to `running` only if its status is one of `from`; `false` when it was not
    /// (another process got there first). The one way a run is taken over, so two resumers or
    /// two answers never drive the same run.
    pub async fn claim(&self, run_id: &str, from: &[RunStatus]) -> Result<bool, JournalError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(self.db())?;
        let row = sqlx::query("SELECT status FROM runs WHERE run_id = ?")
            .bind(run_id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(self.db())?
            .ok_or_else(|| JournalError::UnknownRun(run_id.to_owned()))?;
        let status: String = row.try_get("status").map_err(|e| JournalError::corrupt("runs", e))?;
        if !from.iter().any(|s| s.as_str() == status) {
            return Ok(false);
        }
        sqlx::query(
            "UPDATE runs SET status = 'running', resume_available = 0, heartbeat_at = ?, updated_at = ?
             WHERE run_id = ?",
        )
        .bind(now_ms())
        .bind(now_ms())
        .bind(run_id)
        .execute(&mut *tx)
        .await
        .map_err(self.db())?;
        tx.commit().await.map_err(self.db())?;
        Ok(true)
    }

    /// Records a run's end and starts the next queued run of its lane (returned). A failure
    /// to start it is logged as `agent_run.dispatch_next_failed` and left to the next submission
    /// or reconcile.
    pub async fn finish(&self, run_id: &str, status: RunStatus) -> Result<Option<String>, JournalError> {
        self.set_status(run_id, status).await?;
        let Some(run) = self.run(run_id).await? else { return Ok(None) };
        match self.claim_next(&run.lane).await {
            Ok(next) => Ok(next),
            Err(error) => {
                tracing::warn!(name: "agent_run.dispatch_next_failed", lane = %run.lane, %error, "could not start the next run");
                Ok(None)
            }
        }
    }

    /// Records a heartbeat.
    pub async fn heartbeat(&self, run_id: &str, at_ms: i64) -> Result<(), JournalError> {
        sqlx::query("UPDATE runs SET heartbeat_at = ? WHERE run_id = ?")
            .bind(at_ms)
            .bind(run_id)
            .execute(&self.pool)
            .await
            .map_err(self.db())?;
        Ok(())
    }

    /// Records a cancel request (F7); the running loop sees it at its next boundary.
    pub async fn request_cancel(&self, run_id: &str, at_ms: i64) -> Result<(), JournalError> {
        let done = sqlx::query(
            "UPDATE runs SET cancel_requested_at = COALESCE(cancel_requested_at, ?) WHERE run_id = ?",
        )
        .bind(at_ms)
        .bind(run_id)
        .execute(&self.pool)
        .await
        .map_err(self.db())?;
        touched(&done, || run_id.to_owned())
    }

    /// True once cancellation was requested.
    pub async fn cancel_requested(&self, run_id: &str) -> Result<bool, JournalError> {
        Ok(self.run(run_id).await?.is_some_and(|r| r.cancel_requested_at.is_some()))
    }

    fn run_row(row: &sqlx::sqlite::SqliteRow) -> Result<RunRow, JournalError> {
        let get = |e: sqlx::Error| JournalError::corrupt("runs", e);
        let status: String = row.try_get("status").map_err(get)?;
        Ok(RunRow {
            run_id: row.try_get("run_id").map_err(get)?,
            lane: row.try_get("lane").map_err(get)?,
            parent_run_id: row.try_get("parent_run_id").map_err(get)?,
            depth: row.try_get("depth").map_err(get)?,
            input: row.try_get("input").map_err(get)?,
            status: RunStatus::parse(&status)
                .ok_or_else(|| JournalError::corrupt("runs.status", format!("unknown status `{status}`")))?,
            seq: row.try_get("seq").map_err(get)?,
            heartbeat_at: row.try_get("heartbeat_at").map_err(get)?,
            cancel_requested_at: row.try_get("cancel_requested_at").map_err(get)?,
            resume_available: row.try_get::<i64, _>("resume_available").map_err(get)? != 0,
        })
    }

    /// One run.
    pub async fn run(&self, run_id: &str) -> Result<Option<RunRow>, JournalError> {
        let row = sqlx::query("SELECT * FROM runs WHERE run_id = ?")
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(self.db())?;
        row.as_ref().map(Self::run_row).transpose()
    }

    /// Every run, in submission order.
    pub async fn runs(&self) -> Result<Vec<RunRow>, JournalError> {
        let rows =
            sqlx::query("SELECT * FROM runs ORDER BY seq").fetch_all(&self.pool).await.map_err(self.db())?;
        rows.iter().map(Self::run_row).collect()
    }

    /// The reconciler (F33), run periodically and at worker start: running runs whose
    /// heartbeat is older than `stale_after` become `timed_out` (flagged resumable when their
    /// latest checkpoint allows it); runs waiting on a human whose cancel request is older than
    /// `cancel_timeout` become `cancelled`; free lanes with queued runs start their next run.
    pub async fn reconcile(
        &self,
        now: i64,
        stale_after: Duration,
        cancel_timeout: Duration,
    ) -> Result<ReconcileReport, JournalError> {
        let mut report = ReconcileReport::default();
        let stale_before = now - stale_after.as_millis() as i64;
        let stale =
            sqlx::query("SELECT run_id FROM runs WHERE status = 'running' AND COALESCE(heartbeat_at, 0) < ?")
                .bind(stale_before)
                .fetch_all(&self.pool)
                .await
                .map_err(self.db())?;
        for row in stale {
            let run_id: String = row.try_get("run_id").map_err(|e| JournalError::corrupt("runs", e))?;
            let resumable = self.latest_kind(&run_id).await?.is_some_and(CheckpointKind::allows_resume);
            sqlx::query(
                "UPDATE runs SET status = 'timed_out', resume_available = ?, updated_at = ? WHERE run_id = ?",
            )
            .bind(i64::from(resumable))
            .bind(now)
            .bind(&run_id)
            .execute(&self.pool)
            .await
            .map_err(self.db())?;
            report.timed_out += 1;
            report.resumable += u64::from(resumable);
        }
        let expired = sqlx::query(
            "UPDATE runs SET status = 'cancelled', updated_at = ?
             WHERE status = 'waiting_on_human' AND cancel_requested_at IS NOT NULL AND cancel_requested_at < ?",
        )
        .bind(now)
        .bind(now - cancel_timeout.as_millis() as i64)
        .execute(&self.pool)
        .await
        .map_err(self.db())?;
        report.cancelled = expired.rows_affected();
        let lanes = sqlx::query("SELECT DISTINCT lane FROM runs WHERE status = 'queued'")
            .fetch_all(&self.pool)
            .await
            .map_err(self.db())?;
        for lane in lanes {
            let lane: String = lane.try_get("lane").map_err(|e| JournalError::corrupt("runs", e))?;
            report.dispatched += u64::from(self.claim_next(&lane).await?.is_some());
        }
        tracing::info!(name: "agent_run.reconcile", timed_out = report.timed_out, resumable = report.resumable, cancelled = report.cancelled, "reconciled");
        Ok(report)
    }

    // ---- the tool-call envelope (F34) ----

    /// The envelope row of a call.
    pub async fn tool_call(&self, run_id: &str, call_id: &str) -> Result<Option<ToolCallRow>, JournalError> {
        let row = sqlx::query(
            "SELECT tool, started_at, result FROM tool_calls WHERE run_id = ? AND tool_call_id = ?",
        )
        .bind(run_id)
        .bind(call_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(self.db())?;
        let Some(row) = row else { return Ok(None) };
        let what = format!("tool_calls({run_id}, {call_id})");
        let result: Option<String> = row.try_get("result").map_err(|e| JournalError::corrupt(&what, e))?;
        let completed = result
            .map(|text| serde_json::from_str(&text).map_err(|e| JournalError::corrupt(&what, e)))
            .transpose()?;
        Ok(Some(ToolCallRow {
            tool: row.try_get("tool").map_err(|e| JournalError::corrupt(&what, e))?,
            started_at: row.try_get("started_at").map_err(|e| JournalError::corrupt(&what, e))?,
            completed,
        }))
    }

    /// Writes `started_at` before a tool runs (committed before the tool is called).
    pub async fn start_tool_call(&self, run_id: &str, call: &ToolCall) -> Result<(), JournalError> {
        sqlx::query(
            "INSERT INTO tool_calls (run_id, tool_call_id, tool, arguments, started_at) VALUES (?, ?, ?, ?, ?)
             ON CONFLICT (run_id, tool_call_id) DO UPDATE SET started_at = excluded.started_at",
        )
        .bind(run_id)
        .bind(&call.id)
        .bind(&call.name)
        .bind(&call.arguments)
        .bind(now_ms())
        .execute(&self.pool)
        .await
        .map_err(self.db())?;
        Ok(())
    }

    /// Writes `completed_at` and the result after the tool ran.
    pub async fn complete_tool_call(&self, run_id: &str, result: &ToolResult) -> Result<(), JournalError> {
        let body = serde_json::to_string(result).map_err(|e| JournalError::corrupt("tool result", e))?;
        sqlx::query(
            "UPDATE tool_calls SET completed_at = ?, result = ? WHERE run_id = ? AND tool_call_id = ?",
        )
        .bind(now_ms())
        .bind(body)
        .bind(run_id)
        .bind(&result.call_id)
        .execute(&self.pool)
        .await
        .map_err(self.db())?;
        Ok(())
    }

    /// Records a human's verdict on a call a resume refused to re-run: what it did (`content`),
    /// so the next resume replays that instead of calling the tool.
    pub async fn resolve_tool_call(
        &self,
        run_id: &str,
        call_id: &str,
        content: &str,
        is_error: bool,
    ) -> Result<(), JournalError> {
        let result =
            if is_error { ToolResult::error(call_id, content) } else { ToolResult::ok(call_id, content) };
        let done = sqlx::query(
            "UPDATE tool_calls SET completed_at = ?, result = ? WHERE run_id = ? AND tool_call_id = ?",
        )
        .bind(now_ms())
        .bind(serde_json::to_string(&result).map_err(|e| JournalError::corrupt("tool result", e))?)
        .bind(run_id)
        .bind(call_id)
        .execute(&self.pool)
        .await
        .map_err(self.db())?;
        touched(&done, || format!("{run_id} / {call_id}"))
    }

    // ---- messages and checkpoints (F32, F36) ----

    async fn latest_kind(&self, run_id: &str) -> Result<Option<CheckpointKind>, JournalError> {
        let row = sqlx::query("SELECT kind FROM checkpoints WHERE run_id = ? ORDER BY seq DESC LIMIT 1")
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(self.db())?;
        row.map(|r| {
            let kind: String = r.try_get("kind").map_err(|e| JournalError::corrupt("checkpoints", e))?;
            serde_json::from_value(serde_json::Value::String(kind))
                .map_err(|e| JournalError::corrupt("checkpoints.kind", e))
        })
        .transpose()
    }

    async fn load_checkpoint(
        &self,
        run_id: &str,
        resumable_only: bool,
    ) -> Result<Option<StoredCheckpoint>, JournalError> {
        let rows = sqlx::query(
            "SELECT seq, kind, header, message_count FROM checkpoints WHERE run_id = ? ORDER BY seq DESC",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await
        .map_err(self.db())?;
        for row in rows {
            let seq: i64 = row.try_get("seq").map_err(|e| JournalError::corrupt("checkpoints", e))?;
            let what = format!("checkpoint {seq} of run {run_id}");
            let kind: String = row.try_get("kind").map_err(|e| JournalError::corrupt(&what, e))?;
            let kind: CheckpointKind = serde_json::from_value(serde_json::Value::String(kind))
                .map_err(|e| JournalError::corrupt(&what, e))?;
            if resumable_only && !kind.allows_resume() {
                continue;
            }
            let header: String = row.try_get("header").map_err(|e| JournalError::corrupt(&what, e))?;
            let header: RunHeader =
                serde_json::from_str(&header).map_err(|e| JournalError::corrupt(&what, e))?;
            let count: i64 = row.try_get("message_count").map_err(|e| JournalError::corrupt(&what, e))?;
            let bodies =
                sqlx::query("SELECT idx, body FROM messages WHERE run_id = ? AND idx < ? ORDER BY idx")
                    .bind(run_id)
                    .bind(count)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(self.db())?;
            if bodies.len() as i64 != count {
                return Err(JournalError::corrupt(
                    &what,
                    format!("{count} messages expected, {} stored", bodies.len()),
                ));
            }
            let messages = bodies
                .iter()
                .map(|r| {
                    let body: String = r.try_get("body").map_err(|e| JournalError::corrupt(&what, e))?;
                    serde_json::from_str::<Message>(&body).map_err(|e| JournalError::corrupt(&what, e))
                })
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Some(StoredCheckpoint { kind, header, messages }));
        }
        Ok(None)
    }

    /// The latest checkpoint of any kind (a human pause included).
    pub async fn latest_checkpoint(&self, run_id: &str) -> Result<Option<StoredCheckpoint>, JournalError> {
        self.load_checkpoint(run_id, false).await
    }

    /// Tool calls of a run that started and never completed (what a resume-unsafe halt waits
    /// on), as `(call id, tool)`.
    pub async fn unfinished_tool_calls(&self, run_id: &str) -> Result<Vec<(String, String)>, JournalError> {
        let rows = sqlx::query(
            "SELECT tool_call_id, tool FROM tool_calls WHERE run_id = ? AND completed_at IS NULL
             ORDER BY started_at",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await
        .map_err(self.db())?;
        rows.iter()
            .map(|r| {
                let id: String =
                    r.try_get("tool_call_id").map_err(|e| JournalError::corrupt("tool_calls", e))?;
                let tool: String = r.try_get("tool").map_err(|e| JournalError::corrupt("tool_calls", e))?;
                Ok((id, tool))
            })
            .collect()
    }

    /// Forgets an unfinished call's envelope row, so the next resume runs the call again (a
    /// human's `--retry`). A completed call is never forgotten.
    pub async fn forget_tool_call(&self, run_id: &str, call_id: &str) -> Result<(), JournalError> {
        let done = sqlx::query(
            "DELETE FROM tool_calls WHERE run_id = ? AND tool_call_id = ? AND completed_at IS NULL",
        )
        .bind(run_id)
        .bind(call_id)
        .execute(&self.pool)
        .await
        .map_err(self.db())?;
        touched(&done, || format!("{run_id} / {call_id} (no unfinished call with this id)"))
    }

    /// The latest checkpoint from which the run may be resumed (F34, S2).
    pub async fn latest_resumable(&self, run_id: &str) -> Result<Option<StoredCheckpoint>, JournalError> {
        self.load_checkpoint(run_id, true).await
    }

    /// Saves a checkpoint in one transaction: the new messages (all of them after a rewrite such
    /// as compaction), then the checkpoint row. A crash leaves the previous checkpoint whole.
    pub async fn save_checkpoint(
        &self,
        run_id: &str,
        kind: CheckpointKind,
        header: &RunHeader,
        messages: &[Message],
    ) -> Result<(), JournalError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(self.db())?;
        let row = sqlx::query("SELECT persisted_messages, last_message_hash FROM runs WHERE run_id = ?")
            .bind(run_id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(self.db())?;
        let (persisted, last_hash): (i64, Option<String>) = match row {
            Some(r) => (
                r.try_get("persisted_messages").map_err(|e| JournalError::corrupt("runs", e))?,
                r.try_get("last_message_hash").map_err(|e| JournalError::corrupt("runs", e))?,
            ),
            None => {
                // A run driven without `submit` (a test, a one-off): record it on the fly.
                let now = now_ms();
                sqlx::query(
                    "INSERT INTO runs (run_id, lane, input, status, seq, created_at, updated_at, heartbeat_at)
                     VALUES (?, ?, '', 'running', (SELECT COALESCE(MAX(seq), 0) + 1 FROM runs), ?, ?, ?)",
                )
                .bind(run_id)
                .bind(format!("run:{run_id}"))
                .bind(now)
                .bind(now)
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(self.db())?;
                (0, None)
            }
        };
        let bodies: Vec<String> = messages
            .iter()
            .map(serde_json::to_string)
            .collect::<Result<_, _>>()
            .map_err(|e| JournalError::corrupt("message", e))?;
        let persisted = persisted as usize;
        let prefix_intact = persisted <= bodies.len()
            && kind != CheckpointKind::Compaction
            && (persisted == 0 || last_hash.as_deref() == Some(hash(&bodies[persisted - 1]).as_str()));
        let from = if prefix_intact {
            persisted
        } else {
            sqlx::query("DELETE FROM messages WHERE run_id = ?")
                .bind(run_id)
                .execute(&mut *tx)
                .await
                .map_err(self.db())?;
            0
        };
        for (idx, body) in bodies.iter().enumerate().skip(from) {
            sqlx::query("INSERT INTO messages (run_id, idx, body) VALUES (?, ?, ?)")
                .bind(run_id)
                .bind(idx as i64)
                .bind(body)
                .execute(&mut *tx)
                .await
                .map_err(self.db())?;
        }
        let header_json =
            serde_json::to_string(header).map_err(|e| JournalError::corrupt("run header", e))?;
        sqlx::query(
            "INSERT INTO checkpoints (run_id, seq, kind, header, message_count, created_at)
             VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM checkpoints WHERE run_id = ?), ?, ?, ?, ?)",
        )
        .bind(run_id)
        .bind(run_id)
        .bind(kind_name(kind)?)
        .bind(header_json)
        .bind(bodies.len() as i64)
        .bind(now_ms())
        .execute(&mut *tx)
        .await
        .map_err(self.db())?;
        sqlx::query(
            "UPDATE runs SET persisted_messages = ?, last_message_hash = ?, updated_at = ? WHERE run_id = ?",
        )
        .bind(bodies.len() as i64)
        .bind(bodies.last().map(|b| hash(b)))
        .bind(now_ms())
        .bind(run_id)
        .execute(&mut *tx)
        .await
        .map_err(self.db())?;
        tx.commit().await.map_err(self.db())?;
        Ok(())
    }

    // ---- run journals (F35) ----

    /// The journal of a conversation, as stored JSON.
    pub async fn load_journal(&self, conversation: &str) -> Result<Option<serde_json::Value>, JournalError> {
        let row = sqlx::query("SELECT body FROM journals WHERE conversation = ?")
            .bind(conversation)
            .fetch_optional(&self.pool)
            .await
            .map_err(self.db())?;
        row.map(|r| {
            let body: String = r.try_get("body").map_err(|e| JournalError::corrupt("journals", e))?;
            serde_json::from_str(&body).map_err(|e| JournalError::corrupt("journals", e))
        })
        .transpose()
    }

    /// Stores the journal of a conversation.
    pub async fn save_journal(
        &self,
        conversation: &str,
        body: &serde_json::Value,
    ) -> Result<(), JournalError> {
        sqlx::query(
            "INSERT INTO journals (conversation, body, updated_at) VALUES (?, ?, ?)
             ON CONFLICT (conversation) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
        )
        .bind(conversation)
        .bind(body.to_string())
        .bind(now_ms())
        .execute(&self.pool)
        .await
        .map_err(self.db())?;
        Ok(())
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
