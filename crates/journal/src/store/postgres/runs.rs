//! Runs and lanes on PostgreSQL: submission, claiming (`FOR UPDATE SKIP LOCKED`, the unique
//! active-lane index), take-over, status, heartbeats, cancel requests, the reconciler.

use std::time::Duration;

// The formatted statements only splice in constants (HOLDING, a fixed condition).
use sqlx::{AssertSqlSafe, Row};

use super::*;
use crate::store::common::{claimed, left_for_take_over};

/// The statuses that hold a lane, as SQL.
const HOLDING: &str = "('running', 'waiting_on_human', 'interrupted')";

fn run_id_of(row: Option<sqlx::postgres::PgRow>) -> Result<Option<String>, JournalError> {
    row.map(|r| r.try_get::<String, _>("run_id").map_err(|e| JournalError::corrupt("runs", e))).transpose()
}

impl PostgresStore {
    pub(super) async fn set_recipe(
        &self,
        run_id: &str,
        recipe: &serde_json::Value,
    ) -> Result<(), JournalError> {
        let done = sqlx::query("UPDATE runs SET recipe = $1, updated_at = $2 WHERE run_id = $3")
            .bind(recipe.to_string())
            .bind(now_ms())
            .bind(run_id)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        touched(&done, || run_id.to_owned())
    }

    pub(super) async fn enqueue(&self, spec: &RunSpec) -> Result<(), JournalError> {
        let now = now_ms();
        sqlx::query(
            "INSERT INTO runs (run_id, lane, parent_run_id, depth, input, status, created_at, updated_at, recipe)
             VALUES ($1, $2, $3, $4, $5, 'queued', $6, $6, $7)",
        )
        .bind(&spec.run_id)
        .bind(&spec.lane)
        .bind(&spec.parent_run_id)
        .bind(i64::from(spec.depth))
        .bind(&spec.input)
        .bind(now)
        .bind(spec.recipe_text()?)
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(())
    }

    pub(super) async fn queued_ahead(&self, lane: &str, run_id: &str) -> Result<i64, JournalError> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS n FROM runs WHERE lane = $1 AND status = 'queued'
               AND seq < (SELECT seq FROM runs WHERE run_id = $2)",
        )
        .bind(lane)
        .bind(run_id)
        .fetch_one(&self.pool)
        .await
        .map_err(db)?;
        row.try_get("n").map_err(|e| JournalError::corrupt("runs", e))
    }

    pub(super) async fn claim_run(&self, run_id: &str) -> Result<bool, JournalError> {
        let done = sqlx::query(AssertSqlSafe(format!(
            "UPDATE runs SET status = 'running', updated_at = $1, heartbeat_at = $1, worker = $2
             WHERE run_id = $3 AND status = 'queued'
               AND run_id = (SELECT q.run_id FROM runs q WHERE q.lane = runs.lane AND q.status = 'queued'
                             ORDER BY q.seq LIMIT 1)
               AND NOT EXISTS (SELECT 1 FROM runs a WHERE a.lane = runs.lane AND a.status IN {HOLDING})"
        )))
        .bind(now_ms())
        .bind(&self.worker)
        .bind(run_id)
        .execute(&self.pool)
        .await
        .map(|done| done.rows_affected() == 1);
        claimed(done, db)
    }

    pub(super) async fn due_lanes(&self) -> Result<Vec<String>, JournalError> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "SELECT DISTINCT q.lane FROM runs q WHERE q.status = 'queued'
               AND NOT EXISTS (SELECT 1 FROM runs a WHERE a.lane = q.lane AND a.status IN {HOLDING})
             ORDER BY q.lane"
        )))
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        rows.iter().map(|r| r.try_get("lane").map_err(|e| JournalError::corrupt("runs", e))).collect()
    }

    /// Locks the lane's oldest queued run without skipping it: a second claimer waits, then
    /// finds the lane held (skipping it would let a younger run of the lane win the race).
    pub(super) async fn claim_next(&self, lane: &str) -> Result<Option<String>, JournalError> {
        let row = sqlx::query(AssertSqlSafe(format!(
            "UPDATE runs SET status = 'running', updated_at = $1, heartbeat_at = $1, worker = $2
             WHERE run_id = (SELECT run_id FROM runs WHERE lane = $3 AND status = 'queued'
                             ORDER BY seq LIMIT 1 FOR UPDATE)
               AND status = 'queued'
               AND NOT EXISTS (SELECT 1 FROM runs a WHERE a.lane = $3 AND a.status IN {HOLDING})
             RETURNING run_id"
        )))
        .bind(now_ms())
        .bind(&self.worker)
        .bind(lane)
        .fetch_optional(&self.pool)
        .await;
        run_id_of(claimed(row, db)?)
    }

    pub(super) async fn set_status(&self, run_id: &str, status: RunStatus) -> Result<(), JournalError> {
        let done = sqlx::query(
            "UPDATE runs SET status = $1, resume_available = COALESCE($2, resume_available), updated_at = $3
             WHERE run_id = $4",
        )
        .bind(status.as_str())
        .bind(status.resumable_flag())
        .bind(now_ms())
        .bind(run_id)
        .execute(&self.pool)
        .await
        .map_err(db)?;
        touched(&done, || run_id.to_owned())
    }

    pub(super) async fn claim(&self, run_id: &str, from: &[RunStatus]) -> Result<bool, JournalError> {
        let from: Vec<String> = from.iter().map(|s| s.as_str().to_owned()).collect();
        let done = sqlx::query(
            "UPDATE runs SET status = 'running', resume_available = 0, heartbeat_at = $1, updated_at = $1, worker = $2
             WHERE run_id = $3 AND status = ANY($4)",
        )
        .bind(now_ms())
        .bind(&self.worker)
        .bind(run_id)
        .bind(&from)
        .execute(&self.pool)
        .await
        .map(|done| done.rows_affected() == 1);
        let won = claimed(done, db)?;
        if !won && self.run(run_id).await?.is_none() {
            return Err(JournalError::UnknownRun(run_id.to_owned()));
        }
        Ok(won)
    }

    pub(super) async fn take_over(
        &self,
        stale_before: i64,
        max_takeovers: i64,
    ) -> Result<Option<String>, JournalError> {
        let candidate = |r: &str| {
            format!(
                "{r}.recipe IS NOT NULL AND {r}.takeovers < $3
                 AND (({r}.status = 'running' AND COALESCE({r}.heartbeat_at, 0) < $4)
                   OR ({r}.status = 'interrupted' AND {r}.cancel_requested_at IS NULL)
                   OR ({r}.status = 'timed_out' AND {r}.resume_available = 1 AND {r}.cancel_requested_at IS NULL
                       AND NOT EXISTS (SELECT 1 FROM runs a WHERE a.lane = {r}.lane AND a.status IN {HOLDING})))"
            )
        };
        // The subquery locks one candidate (others skip it); the outer condition is evaluated
        // again on the locked row, so a heartbeat that arrived meanwhile wins.
        let row = sqlx::query(AssertSqlSafe(format!(
            "UPDATE runs SET status = 'running', worker = $1, heartbeat_at = $2, updated_at = $2,
                    takeovers = takeovers + 1, resume_available = 0
             WHERE run_id = (SELECT c.run_id FROM runs c WHERE {} ORDER BY c.seq LIMIT 1 FOR UPDATE SKIP LOCKED)
               AND {}
             RETURNING run_id",
            candidate("c"),
            candidate("runs"),
        )))
        .bind(&self.worker)
        .bind(now_ms())
        .bind(max_takeovers)
        .bind(stale_before)
        .fetch_optional(&self.pool)
        .await;
        run_id_of(claimed(row, db)?)
    }

    pub(super) async fn heartbeat(&self, run_id: &str, at_ms: i64) -> Result<bool, JournalError> {
        let done =
            sqlx::query("UPDATE runs SET heartbeat_at = $1 WHERE run_id = $2 AND COALESCE(worker, $3) = $3")
                .bind(at_ms)
                .bind(run_id)
                .bind(&self.worker)
                .execute(&self.pool)
                .await
                .map_err(db)?;
        Ok(done.rows_affected() == 1 || self.run(run_id).await?.is_none())
    }

    pub(super) async fn request_cancel(&self, run_id: &str, at_ms: i64) -> Result<(), JournalError> {
        // Only a run that has not ended takes the request (a timed-out run a worker may still
        // take over has not): one statement, so a run that ends meanwhile is never marked.
        let done = sqlx::query(concat!(
            "UPDATE runs SET cancel_requested_at = COALESCE(cancel_requested_at, $1) WHERE run_id = $2 AND ",
            super::super::common::cancellable!()
        ))
        .bind(at_ms)
        .bind(run_id)
        .execute(&self.pool)
        .await
        .map_err(db)?;
        if done.rows_affected() > 0 {
            return Ok(());
        }
        match self.run(run_id).await? {
            Some(row) => Err(JournalError::AlreadyEnded { run_id: run_id.to_owned(), status: row.status }),
            None => Err(JournalError::UnknownRun(run_id.to_owned())),
        }
    }

    fn run_row(row: &sqlx::postgres::PgRow) -> Result<RunRow, JournalError> {
        let get = |e: sqlx::Error| JournalError::corrupt("runs", e);
        RunRow::parse(
            &|c| row.try_get(c).map_err(get),
            &|c| row.try_get(c).map_err(get),
            &|c| row.try_get(c).map_err(get),
            &|c| row.try_get(c).map_err(get),
        )
    }

    pub(super) async fn run(&self, run_id: &str) -> Result<Option<RunRow>, JournalError> {
        let row = sqlx::query("SELECT * FROM runs WHERE run_id = $1")
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        row.as_ref().map(Self::run_row).transpose()
    }

    pub(super) async fn runs(&self) -> Result<Vec<RunRow>, JournalError> {
        let rows = sqlx::query("SELECT * FROM runs ORDER BY seq").fetch_all(&self.pool).await.map_err(db)?;
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
        let stale = sqlx::query(
            "SELECT run_id, recipe IS NOT NULL AS has_recipe, takeovers FROM runs WHERE status = 'running' AND COALESCE(heartbeat_at, 0) < $1",
        )
        .bind(stale_before)
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        for row in stale {
            let run_id: String = row.try_get("run_id").map_err(|e| JournalError::corrupt("runs", e))?;
            let resumable = self.latest_kind(&run_id).await?.is_some_and(CheckpointKind::allows_resume);
            let has_recipe: bool = row.try_get("has_recipe").map_err(|e| JournalError::corrupt("runs", e))?;
            let takeovers: i64 = row.try_get("takeovers").map_err(|e| JournalError::corrupt("runs", e))?;
            if left_for_take_over(has_recipe, takeovers, resumable) {
                continue;
            }
            // Conditional: a worker that took the run over (or a heartbeat) since wins, and
            // of several reconcilers only one counts it.
            let done = sqlx::query(
                "UPDATE runs SET status = 'timed_out', resume_available = $1, updated_at = $2
                 WHERE run_id = $3 AND status = 'running' AND COALESCE(heartbeat_at, 0) < $4",
            )
            .bind(i64::from(resumable))
            .bind(now)
            .bind(&run_id)
            .bind(stale_before)
            .execute(&self.pool)
            .await
            .map_err(db)?;
            if done.rows_affected() == 1 {
                report.timed_out += 1;
                report.resumable += u64::from(resumable);
            }
        }
        let expired = sqlx::query(
            "UPDATE runs SET status = 'cancelled', updated_at = $1
             WHERE status = 'waiting_on_human' AND cancel_requested_at IS NOT NULL AND cancel_requested_at < $2",
        )
        .bind(now)
        .bind(now - cancel_timeout.as_millis() as i64)
        .execute(&self.pool)
        .await
        .map_err(db)?;
        report.cancelled = expired.rows_affected();
        report.due = self.due_lanes().await?.len() as u64;
        report.trace();
        Ok(report)
    }
}
