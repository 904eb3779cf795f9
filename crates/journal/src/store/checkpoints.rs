//! Messages and checkpoints (F32, F36), each saved in one transaction.

use sqlx::Row;

use super::*;

impl SqliteStore {
    // ---- messages and checkpoints (F32, F36) ----

    pub(super) async fn latest_kind(&self, run_id: &str) -> Result<Option<CheckpointKind>, JournalError> {
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

    /// The outcome a run recorded when it finished (or paused), from its latest checkpoint;
    /// `None` while it has none.
    pub async fn final_outcome(
        &self,
        run_id: &str,
    ) -> Result<Option<looprail_loop_core::outcome::Outcome>, JournalError> {
        Ok(self.latest_checkpoint(run_id).await?.and_then(|c| match c.header.core.phase {
            looprail_loop_core::engine::Phase::Finished { outcome } => Some(outcome),
            _ => None,
        }))
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
}
