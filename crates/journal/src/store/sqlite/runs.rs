//! Runs and lanes (F31): submission, claiming, take-over, status, heartbeats, cancel requests,
//! the reconciler (F33).

use std::time::Duration;

// The formatted statements only splice in constants (HOLDING, a fixed condition).
use sqlx::{AssertSqlSafe, Row};

use super::*;
use crate::store::common::{claimed, left_for_take_over};

/// The statuses that hold a lane, as SQL.
const HOLDING: &str = "('running', 'waiting_on_human', 'interrupted')";

impl SqliteStore {
    pub(super) async fn set_recipe(
        &self,
        run_id: &str,
        recipe: &serde_json::Value,
    ) -> Result<(), JournalError> {
        let done = sqlx::query("UPDATE runs SET recipe = ?, updated_at = ? WHERE run_id = ?")
            .bind(recipe.to_string())
            .bind(now_ms())
            .bind(run_id)
            .execute(&self.pool)
            .await
            .map_err(self.db())?;
        touched(&done, || run_id.to_owned())
    }

    pub(super) async fn enqueue(&self, spec: &RunSpec) -> Result<(), JournalError> {
        let now = now_ms();
        sqlx::query(
            "INSERT INTO runs (run_id, lane, parent_run_id, depth, input, status, seq, created_at, updated_at, recipe)
             VALUES (?, ?, ?, ?, ?, 'queued', (SELECT COALESCE(MAX(seq), 0) + 1 FROM runs), ?, ?, ?)",
        )
        .bind(&spec.run_id)
        .bind(&spec.lane)
        .bind(&spec.parent_run_id)
        .bind(i64::from(spec.depth))
        .bind(&spec.input)
        .bind(now)
        .bind(now)
        .bind(spec.recipe_text()?)
        .execute(&self.pool)
        .await
        .map_err(self.db())?;
        Ok(())
    }

    pub(super) async fn queued_ahead(&self, lane: &str, run_id: &str) -> Result<i64, JournalError> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS n FROM runs WHERE lane = ? AND status = 'queued' AND seq < (SELECT seq FROM runs WHERE run_id = ?)",
        )
        .bind(lane)
        .bind(run_id)
        .fetch_one(&self.pool)
        .await
        .map_err(self.db())?;
        row.try_get("n").map_err(|e| JournalError::corrupt("runs", e))
    }

    /// One statement; the unique index on active lanes refuses a second holder.
    pub(super) async fn claim_run(&self, run_id: &str) -> Result<bool, JournalError> {
        let now = now_ms();
        let done = sqlx::query(AssertSqlSafe(format!(
            "UPDATE runs SET status = 'running', updated_at = ?, heartbeat_at = ?, worker = ?
             WHERE run_id = ? AND status = 'queued'
               AND run_id = (SELECT q.run_id FROM runs q WHERE q.lane = runs.lane AND q.status = 'queued' ORDER BY q.seq LIMIT 1)
               AND NOT EXISTS (SELECT 1 FROM runs a WHERE a.lane = runs.lane AND a.status IN {HOLDING})"
        )))
        .bind(now)
        .bind(now)
        .bind(&self.worker)
        .bind(run_id)
        .execute(&self.pool)
        .await;
        claimed(done.map(|done| done.rows_affected() == 1), self.db())
    }

    pub(super) async fn due_lanes(&self) -> Result<Vec<String>, JournalError> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "SELECT DISTINCT q.lane FROM runs q WHERE q.status = 'queued'
               AND NOT EXISTS (SELECT 1 FROM runs a WHERE a.lane = q.lane AND a.status IN {HOLDING})
             ORDER BY q.lane"
        )))
        .fetch_all(&self.pool)
        .await
        .map_err(self.db())?;
        rows.iter().map(|r| r.try_get("lane").map_err(|e| JournalError::corrupt("runs", e))).collect()
    }

    pub(super) async fn claim_next(&self, lane: &str) -> Result<Option<String>, JournalError> {
        let now = now_ms();
        let row = sqlx::query(AssertSqlSafe(format!(
            "UPDATE runs SET status = 'running', updated_at = ?, heartbeat_at = ?, worker = ?
             WHERE run_id = (SELECT run_id FROM runs WHERE lane = ? AND status = 'queued' ORDER BY seq LIMIT 1)
               AND NOT EXISTS (SELECT 1 FROM runs WHERE lane = ? AND status IN {HOLDING})
             RETURNING run_id"
        )))
        .bind(now)
        .bind(now)
        .bind(&self.worker)
        .bind(lane)
        .bind(lane)
        .fetch_optional(&self.pool)
        .await;
        let row = claimed(row, self.db())?;
        row.map(|r| r.try_get::<String, _>("run_id").map_err(|e| JournalError::corrupt("runs", e)))
            .transpose()
    }

    pub(super) async fn set_status(&self, run_id: &str, status: RunStatus) -> Result<(), JournalError> {
        let done = sqlx::query(
            "UPDATE runs SET status = ?, resume_available = COALESCE(?, resume_available), updated_at = ?
             WHERE run_id = ?",
        )
        .bind(status.as_str())
        .bind(status.resumable_flag())
        .bind(now_ms())
        .bind(run_id)
        .execute(&self.pool)
        .await
        .map_err(self.db())?;
        touched(&done, || run_id.to_owned())
    }

    pub(super) async fn claim(&self, run_id: &str, from: &[RunStatus]) -> Result<bool, JournalError> {
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
        let now = now_ms();
        let done = sqlx::query(
            "UPDATE runs SET status = 'running', resume_available = 0, heartbeat_at = ?, updated_at = ?, worker = ?
             WHERE run_id = ?",
        )
        .bind(now)
        .bind(now)
        .bind(&self.worker)
        .bind(run_id)
        .execute(&mut *tx)
        .await;
        if !claimed(done.map(|_| true), self.db())? {
            return Ok(false);
        }
        tx.commit().await.map_err(self.db())?;
        Ok(true)
    }

    pub(super) async fn take_over(
        &self,
        stale_before: i64,
        max_takeovers: i64,
    ) -> Result<Option<String>, JournalError> {
        let now = now_ms();
        // SQLite runs one writer at a time, so choosing and taking the run is one step.
        let row = sqlx::query(AssertSqlSafe(format!(
            "UPDATE runs SET status = 'running', worker = ?, heartbeat_at = ?, updated_at = ?,
                    takeovers = takeovers + 1, resume_available = 0
             WHERE run_id = (
                SELECT c.run_id FROM runs c
                WHERE c.recipe IS NOT NULL AND c.takeovers < ?
                  AND ((c.status = 'running' AND COALESCE(c.heartbeat_at, 0) < ?)
                    OR (c.status = 'interrupted' AND c.cancel_requested_at IS NULL)
                    OR (c.status = 'timed_out' AND c.resume_available = 1 AND c.cancel_requested_at IS NULL
                        AND NOT EXISTS (SELECT 1 FROM runs a WHERE a.lane = c.lane AND a.status IN {HOLDING})))
                ORDER BY c.seq LIMIT 1)
             RETURNING run_id"
        )))
        .bind(&self.worker)
        .bind(now)
        .bind(now)
        .bind(max_takeovers)
        .bind(stale_before)
        .fetch_optional(&self.pool)
        .await;
        let row = claimed(row, self.db())?;
        row.map(|r| r.try_get::<String, _>("run_id").map_err(|e| JournalError::corrupt("runs", e)))
            .transpose()
    }

    pub(super) async fn heartbeat(&self, run_id: &str, at_ms: i64) -> Result<bool, JournalError> {
        let done =
            sqlx::query("UPDATE runs SET heartbeat_at = ? WHERE run_id = ? AND COALESCE(worker, ?) = ?")
                .bind(at_ms)
                .bind(run_id)
                .bind(&self.worker)
                .bind(&self.worker)
                .execute(&self.pool)
                .await
                .map_err(self.db())?;
        // No row updated: another worker holds it, or the run is not stored (yet).
        Ok(done.rows_affected() == 1 || self.run(run_id).await?.is_none())
    }

    pub(super) async fn request_cancel(&self, run_id: &str, at_ms: i64) -> Result<(), JournalError> {
        // Only a run that has not ended takes the request (a timed-out run a worker may still
        // take over has not): one statement, so a run that ends meanwhile is never marked.
        let done = sqlx::query(concat!(
            "UPDATE runs SET cancel_requested_at = COALESCE(cancel_requested_at, ?) WHERE run_id = ? AND ",
            super::super::common::cancellable!()
        ))
        .bind(at_ms)
        .bind(run_id)
        .execute(&self.pool)
        .await
        .map_err(self.db())?;
        if done.rows_affected() > 0 {
            return Ok(());
        }
        match self.run(run_id).await? {
            Some(row) => Err(JournalError::AlreadyEnded { run_id: run_id.to_owned(), status: row.status }),
            None => Err(JournalError::UnknownRun(run_id.to_owned())),
        }
    }

    fn run_row(row: &sqlx::sqlite::SqliteRow) -> Result<RunRow, JournalError> {
        let get = |e: sqlx::Error| JournalError::corrupt("runs", e);
        RunRow::parse(
            &|c| row.try_get(c).map_err(get),
            &|c| row.try_get(c).map_err(get),
            &|c| row.try_get(c).map_err(get),
            &|c| row.try_get(c).map_err(get),
        )
    }

    pub(super) async fn run(&self, run_id: &str) -> Result<Option<RunRow>, JournalError> {
        let row = sqlx::query("SELECT * FROM runs WHERE run_id = ?")
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(self.db())?;
        row.as_ref().map(Self::run_row).transpose()
    }

    pub(super) async fn runs(&self) -> Result<Vec<RunRow>, JournalError> {
        let rows =
            sqlx::query("SELECT * FROM runs ORDER BY seq").fetch_all(&self.pool).await.map_err(self.db())?;
        rows.iter().map(Self::run_row).collect()
    }

    pub(super) async fn reconcile(
        &self,
        now: i64,
        stale_after: Duration,
        cancel_timeout: Duration,
    ) -> Result<ReconcileReport, JournalError> {
        let mut report = ReconcileReport::default();
        let stale_before = now - stale_after.as_millis() as i64;
        let stale =
            sqlx::query("SELECT run_id, recipe IS NOT NULL AS has_recipe, takeovers FROM runs WHERE status = 'running' AND COALESCE(heartbeat_at, 0) < ?")
                .bind(stale_before)
                .fetch_all(&self.pool)
                .await
                .map_err(self.db())?;
        for row in stale {
            let run_id: String = row.try_get("run_id").map_err(|e| JournalError::corrupt("runs", e))?;
            let resumable = self.latest_kind(&run_id).await?.is_some_and(CheckpointKind::allows_resume);
            let has_recipe: bool = row.try_get("has_recipe").map_err(|e| JournalError::corrupt("runs", e))?;
            let takeovers: i64 = row.try_get("takeovers").map_err(|e| JournalError::corrupt("runs", e))?;
            if left_for_take_over(has_recipe, takeovers, resumable) {
                continue;
            }
            // Conditional: a worker that took the run over (or a heartbeat) since wins.
            let done = sqlx::query(
                "UPDATE runs SET status = 'timed_out', resume_available = ?, updated_at = ?
                 WHERE run_id = ? AND status = 'running' AND COALESCE(heartbeat_at, 0) < ?",
            )
            .bind(i64::from(resumable))
            .bind(now)
            .bind(&run_id)
            .bind(stale_before)
            .execute(&self.pool)
            .await
            .map_err(self.db())?;
            if done.rows_affected() == 1 {
                report.timed_out += 1;
                report.resumable += u64::from(resumable);
            }
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
        // Due runs are counted, not started: starting one here would leave it `running` with
        // no process executing it. A worker (or the waiting submitter) claims it.
        report.due = self.due_lanes().await?.len() as u64;
        report.trace();
        Ok(report)
    }
}
