//! Messages and checkpoints (F32, F36), each saved in one transaction.

use sqlx::Row;

use super::*;
use crate::store::common::check_holder;

impl SqliteStore {
    pub(super) async fn latest_kind(&self, run_id: &str) -> Result<Option<CheckpointKind>, JournalError> {
        let row = sqlx::query("SELECT kind FROM checkpoints WHERE run_id = ? ORDER BY seq DESC LIMIT 1")
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(self.db())?;
        row.map(|r| {
            let kind: String = r.try_get("kind").map_err(|e| JournalError::corrupt("checkpoints", e))?;
            parse_kind(kind, "checkpoints.kind")
        })
        .transpose()
    }

    pub(super) async fn load_checkpoint(
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
            let kind = parse_kind(kind, &what)?;
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

    pub(super) async fn save_checkpoint(
        &self,
        run_id: &str,
        kind: CheckpointKind,
        header: &RunHeader,
        messages: &[Message],
    ) -> Result<(), JournalError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(self.db())?;
        let row = sqlx::query(
            "SELECT status, worker, persisted_messages, last_message_hash FROM runs WHERE run_id = ?",
        )
        .bind(run_id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(self.db())?;
        let get = |e: sqlx::Error| JournalError::corrupt("runs", e);
        let (persisted, last_hash): (i64, Option<String>) = match row {
            Some(r) => {
                let status: String = r.try_get("status").map_err(get)?;
                check_holder(run_id, &status, r.try_get("worker").map_err(get)?, &self.worker)?;
                (r.try_get("persisted_messages").map_err(get)?, r.try_get("last_message_hash").map_err(get)?)
            }
            None => {
                // A run driven without `submit` (a test, a one-off): record it on the fly.
                let now = now_ms();
                sqlx::query(
                    "INSERT INTO runs (run_id, lane, input, status, seq, created_at, updated_at, heartbeat_at, worker)
                     VALUES (?, ?, '', 'running', (SELECT COALESCE(MAX(seq), 0) + 1 FROM runs), ?, ?, ?, ?)",
                )
                .bind(run_id)
                .bind(format!("run:{run_id}"))
                .bind(now)
                .bind(now)
                .bind(now)
                .bind(&self.worker)
                .execute(&mut *tx)
                .await
                .map_err(self.db())?;
                (0, None)
            }
        };
        let plan = CheckpointPlan::new(persisted, last_hash.as_deref(), kind, header, messages)?;
        if plan.rewrite {
            sqlx::query("DELETE FROM messages WHERE run_id = ?")
                .bind(run_id)
                .execute(&mut *tx)
                .await
                .map_err(self.db())?;
        }
        for (idx, body) in plan.new_messages() {
            sqlx::query("INSERT INTO messages (run_id, idx, body) VALUES (?, ?, ?)")
                .bind(run_id)
                .bind(idx)
                .bind(body)
                .execute(&mut *tx)
                .await
                .map_err(self.db())?;
        }
        let now = now_ms();
        sqlx::query(
            "INSERT INTO checkpoints (run_id, seq, kind, header, message_count, created_at)
             VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM checkpoints WHERE run_id = ?), ?, ?, ?, ?)",
        )
        .bind(run_id)
        .bind(run_id)
        .bind(&plan.kind)
        .bind(&plan.header)
        .bind(plan.total())
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(self.db())?;
        sqlx::query(
            "UPDATE runs SET persisted_messages = ?, last_message_hash = ?, updated_at = ? WHERE run_id = ?",
        )
        .bind(plan.total())
        .bind(&plan.last_hash)
        .bind(now)
        .bind(run_id)
        .execute(&mut *tx)
        .await
        .map_err(self.db())?;
        tx.commit().await.map_err(self.db())?;
        Ok(())
    }
}
