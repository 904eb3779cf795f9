//! Runs and lanes (F31): submission, claiming, status, heartbeats, cancel requests, the
//! reconciler (F33).

use std::time::Duration;

use sqlx::Row;

use super::*;

impl SqliteStore {
    // ---- runs and lanes (F31) ----

    /// Replaces a run's recipe (a human continuing it on another server, say).
    pub async fn set_recipe(&self, run_id: &str, recipe: &serde_json::Value) -> Result<(), JournalError> {
        let done = sqlx::query("UPDATE runs SET recipe = ?, updated_at = ? WHERE run_id = ?")
            .bind(recipe.to_string())
            .bind(now_ms())
            .bind(run_id)
            .execute(&self.pool)
            .await
            .map_err(self.db())?;
        touched(&done, || run_id.to_owned())
    }

    /// Records a run as queued, without starting it: a worker (or the submitter, with
    /// [`SqliteStore::claim_run`]) starts it when its lane is free.
    pub async fn enqueue(&self, spec: &RunSpec) -> Result<(), JournalError> {
        let now = now_ms();
        let recipe = spec
            .recipe
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| JournalError::corrupt("run recipe", e))?;
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
        .bind(recipe)
        .execute(&self.pool)
        .await
        .map_err(self.db())?;
        Ok(())
    }

    /// Records a run; starts it when its lane is free, queues it otherwise.
    pub async fn submit(&self, spec: &RunSpec) -> Result<Submitted, JournalError> {
        self.enqueue(spec).await?;
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

    /// Starts the queued run `run_id` if it is due: the oldest queued run of its lane, with no
    /// run holding the lane. `false` when it is not (yet). One statement, like
    /// [`SqliteStore::claim_next`].
    pub async fn claim_run(&self, run_id: &str) -> Result<bool, JournalError> {
        let now = now_ms();
        let done = sqlx::query(
            "UPDATE runs SET status = 'running', updated_at = ?, heartbeat_at = ?
             WHERE run_id = ? AND status = 'queued'
               AND run_id = (SELECT q.run_id FROM runs q WHERE q.lane = runs.lane AND q.status = 'queued' ORDER BY q.seq LIMIT 1)
               AND NOT EXISTS (SELECT 1 FROM runs a WHERE a.lane = runs.lane AND a.status IN ('running', 'waiting_on_human'))",
        )
        .bind(now)
        .bind(now)
        .bind(run_id)
        .execute(&self.pool)
        .await
        .map_err(self.db())?;
        Ok(done.rows_affected() == 1)
    }

    /// Lanes with queued runs and no run holding them: the work a worker can start now.
    pub async fn due_lanes(&self) -> Result<Vec<String>, JournalError> {
        let rows = sqlx::query(
            "SELECT DISTINCT q.lane FROM runs q WHERE q.status = 'queued'
               AND NOT EXISTS (SELECT 1 FROM runs a WHERE a.lane = q.lane AND a.status IN ('running', 'waiting_on_human'))
             ORDER BY q.lane",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(self.db())?;
        rows.iter().map(|r| r.try_get("lane").map_err(|e| JournalError::corrupt("runs", e))).collect()
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
            recipe: row
                .try_get::<Option<String>, _>("recipe")
                .map_err(get)?
                .map(|text| serde_json::from_str(&text).map_err(|e| JournalError::corrupt("runs.recipe", e)))
                .transpose()?,
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
        // Due runs are counted, not started: starting one here would leave it `running` with
        // no process executing it. A worker (or the waiting submitter) claims it.
        report.due = self.due_lanes().await?.len() as u64;
        tracing::info!(name: "agent_run.reconcile", timed_out = report.timed_out, resumable = report.resumable, cancelled = report.cancelled, due = report.due, "reconciled");
        Ok(report)
    }
}
