//! What a run writes on PostgreSQL: messages and checkpoints (each saved in one transaction,
//! only the new messages), the tool-call envelope, run journals.

use sqlx::Row;

use super::*;
use crate::store::common::check_holder;
use looprail_loop_core::json_text::json_text;

impl PostgresStore {
    /// Locks the run row for this transaction and refuses when another worker holds the run;
    /// returns `(persisted_messages, last_message_hash)`, or `None` for an unknown run.
    async fn lock_run(
        &self,
        tx: &mut sqlx::PgConnection,
        run_id: &str,
    ) -> Result<Option<(i64, Option<String>)>, JournalError> {
        let row = sqlx::query(
            "SELECT status, worker, persisted_messages, last_message_hash FROM runs WHERE run_id = $1 FOR UPDATE",
        )
        .bind(run_id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db)?;
        let Some(row) = row else { return Ok(None) };
        let get = |e: sqlx::Error| JournalError::corrupt("runs", e);
        let status: String = row.try_get("status").map_err(get)?;
        check_holder(run_id, &status, row.try_get("worker").map_err(get)?, &self.worker)?;
        Ok(Some((
            row.try_get("persisted_messages").map_err(get)?,
            row.try_get("last_message_hash").map_err(get)?,
        )))
    }

    pub(super) async fn latest_kind(&self, run_id: &str) -> Result<Option<CheckpointKind>, JournalError> {
        let row = sqlx::query("SELECT kind FROM checkpoints WHERE run_id = $1 ORDER BY seq DESC LIMIT 1")
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        row.map(|r| {
            parse_kind(
                r.try_get("kind").map_err(|e| JournalError::corrupt("checkpoints", e))?,
                "checkpoints.kind",
            )
        })
        .transpose()
    }

    pub(super) async fn load_checkpoint(
        &self,
        run_id: &str,
        resumable_only: bool,
    ) -> Result<Option<StoredCheckpoint>, JournalError> {
        let rows = sqlx::query("SELECT seq, kind FROM checkpoints WHERE run_id = $1 ORDER BY seq DESC")
            .bind(run_id)
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        for row in rows {
            let seq: i64 = row.try_get("seq").map_err(|e| JournalError::corrupt("checkpoints", e))?;
            let what = format!("checkpoint {seq} of run {run_id}");
            let kind = parse_kind(row.try_get("kind").map_err(|e| JournalError::corrupt(&what, e))?, &what)?;
            if resumable_only && !kind.allows_resume() {
                continue;
            }
            let row =
                sqlx::query("SELECT header, message_count FROM checkpoints WHERE run_id = $1 AND seq = $2")
                    .bind(run_id)
                    .bind(seq)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(db)?;
            let header: String = row.try_get("header").map_err(|e| JournalError::corrupt(&what, e))?;
            let header: RunHeader =
                serde_json::from_str(&header).map_err(|e| JournalError::corrupt(&what, e))?;
            let count: i64 = row.try_get("message_count").map_err(|e| JournalError::corrupt(&what, e))?;
            let bodies = sqlx::query("SELECT body FROM messages WHERE run_id = $1 AND idx < $2 ORDER BY idx")
                .bind(run_id)
                .bind(count)
                .fetch_all(&self.pool)
                .await
                .map_err(db)?;
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
        let mut tx = self.pool.begin().await.map_err(db)?;
        let now = now_ms();
        let (persisted, last_hash) = match self.lock_run(&mut tx, run_id).await? {
            Some(stored) => stored,
            None => {
                // A run driven without `submit` (a test, a one-off): record it on the fly.
                sqlx::query(
                    "INSERT INTO runs (run_id, lane, input, status, created_at, updated_at, heartbeat_at, worker)
                     VALUES ($1, $2, '', 'running', $3, $3, $3, $4)",
                )
                .bind(run_id)
                .bind(format!("run:{run_id}"))
                .bind(now)
                .bind(&self.worker)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
                (0, None)
            }
        };
        let plan = CheckpointPlan::new(persisted, last_hash.as_deref(), kind, header, messages)?;
        if plan.rewrite {
            sqlx::query("DELETE FROM messages WHERE run_id = $1")
                .bind(run_id)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
        }
        let (indexes, bodies): (Vec<i64>, Vec<&str>) = plan.new_messages().unzip();
        if !indexes.is_empty() {
            // One statement for all new messages.
            sqlx::query(
                "INSERT INTO messages (run_id, idx, body) SELECT $1, * FROM UNNEST($2::BIGINT[], $3::TEXT[])",
            )
            .bind(run_id)
            .bind(&indexes)
            .bind(&bodies)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        }
        sqlx::query(
            "INSERT INTO checkpoints (run_id, seq, kind, header, message_count, created_at)
             VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM checkpoints WHERE run_id = $1), $2, $3, $4, $5)",
        )
        .bind(run_id)
        .bind(&plan.kind)
        .bind(&plan.header)
        .bind(plan.total())
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        sqlx::query("UPDATE runs SET persisted_messages = $1, last_message_hash = $2, updated_at = $3 WHERE run_id = $4")
            .bind(plan.total())
            .bind(&plan.last_hash)
            .bind(now)
            .bind(run_id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)
    }

    pub(super) async fn tool_call(
        &self,
        run_id: &str,
        call_id: &str,
    ) -> Result<Option<ToolCallRow>, JournalError> {
        let row = sqlx::query(
            "SELECT tool, started_at, result, attempts FROM tool_calls WHERE run_id = $1 AND tool_call_id = $2",
        )
        .bind(run_id)
        .bind(call_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(db)?;
        let Some(row) = row else { return Ok(None) };
        let what = format!("tool_calls({run_id}, {call_id})");
        let result: Option<String> = row.try_get("result").map_err(|e| JournalError::corrupt(&what, e))?;
        Ok(Some(ToolCallRow {
            tool: row.try_get("tool").map_err(|e| JournalError::corrupt(&what, e))?,
            started_at: row.try_get("started_at").map_err(|e| JournalError::corrupt(&what, e))?,
            attempts: row.try_get("attempts").map_err(|e| JournalError::corrupt(&what, e))?,
            completed: result
                .map(|text| serde_json::from_str(&text).map_err(|e| JournalError::corrupt(&what, e)))
                .transpose()?,
        }))
    }

    pub(super) async fn start_tool_call(&self, run_id: &str, call: &ToolCall) -> Result<(), JournalError> {
        let mut tx = self.pool.begin().await.map_err(db)?;
        self.lock_run(&mut tx, run_id).await?;
        sqlx::query(
            "INSERT INTO tool_calls (run_id, tool_call_id, tool, arguments, started_at) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (run_id, tool_call_id) DO UPDATE SET started_at = excluded.started_at, attempts = tool_calls.attempts + 1",
        )
        .bind(run_id)
        .bind(&call.id)
        .bind(&call.name)
        .bind(&call.arguments)
        .bind(now_ms())
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        tx.commit().await.map_err(db)
    }

    async fn set_result(
        &self,
        run_id: &str,
        call_id: &str,
        result: &ToolResult,
    ) -> Result<PgQueryResult, JournalError> {
        let body = serde_json::to_string(result).map_err(|e| JournalError::corrupt("tool result", e))?;
        sqlx::query(
            "UPDATE tool_calls SET completed_at = $1, result = $2 WHERE run_id = $3 AND tool_call_id = $4",
        )
        .bind(now_ms())
        .bind(body)
        .bind(run_id)
        .bind(call_id)
        .execute(&self.pool)
        .await
        .map_err(db)
    }

    pub(super) async fn complete_tool_call(
        &self,
        run_id: &str,
        result: &ToolResult,
    ) -> Result<(), JournalError> {
        self.set_result(run_id, &result.call_id, result).await.map(|_| ())
    }

    pub(super) async fn resolve_tool_call(
        &self,
        run_id: &str,
        call_id: &str,
        content: &str,
        is_error: bool,
    ) -> Result<(), JournalError> {
        let result =
            if is_error { ToolResult::error(call_id, content) } else { ToolResult::ok(call_id, content) };
        let done = self.set_result(run_id, call_id, &result).await?;
        touched(&done, || format!("{run_id} / {call_id}"))
    }

    pub(super) async fn unfinished_tool_calls(
        &self,
        run_id: &str,
    ) -> Result<Vec<(String, String)>, JournalError> {
        let rows = sqlx::query(
            "SELECT tool_call_id, tool FROM tool_calls WHERE run_id = $1 AND completed_at IS NULL ORDER BY started_at",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        let get = |e: sqlx::Error| JournalError::corrupt("tool_calls", e);
        rows.iter()
            .map(|r| Ok((r.try_get("tool_call_id").map_err(get)?, r.try_get("tool").map_err(get)?)))
            .collect()
    }

    pub(super) async fn forget_tool_call(&self, run_id: &str, call_id: &str) -> Result<(), JournalError> {
        let done = sqlx::query(
            "DELETE FROM tool_calls WHERE run_id = $1 AND tool_call_id = $2 AND completed_at IS NULL",
        )
        .bind(run_id)
        .bind(call_id)
        .execute(&self.pool)
        .await
        .map_err(db)?;
        touched(&done, || format!("{run_id} / {call_id} (no unfinished call with this id)"))
    }

    pub(super) async fn load_journal(
        &self,
        conversation: &str,
    ) -> Result<Option<serde_json::Value>, JournalError> {
        let row = sqlx::query("SELECT body FROM journals WHERE conversation = $1")
            .bind(conversation)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        row.map(|r| {
            let body: String = r.try_get("body").map_err(|e| JournalError::corrupt("journals", e))?;
            serde_json::from_str(&body).map_err(|e| JournalError::corrupt("journals", e))
        })
        .transpose()
    }

    pub(super) async fn save_journal(
        &self,
        conversation: &str,
        body: &serde_json::Value,
    ) -> Result<(), JournalError> {
        sqlx::query(
            "INSERT INTO journals (conversation, body, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (conversation) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
        )
        .bind(conversation)
        .bind(json_text(body))
        .bind(now_ms())
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(())
    }

    /// Stores `body` only while the stored document is `expected` (see `RunStore::swap_journal`).
    pub(super) async fn swap_journal(
        &self,
        key: &str,
        expected: Option<&serde_json::Value>,
        body: &serde_json::Value,
    ) -> Result<bool, JournalError> {
        let done = match expected {
            None => sqlx::query(
                "INSERT INTO journals (conversation, body, updated_at) VALUES ($1, $2, $3)
                 ON CONFLICT (conversation) DO NOTHING",
            )
            .bind(key)
            .bind(json_text(body))
            .bind(now_ms()),
            Some(expected) => sqlx::query(
                "UPDATE journals SET body = $2, updated_at = $3 WHERE conversation = $1 AND body = $4",
            )
            .bind(key)
            .bind(json_text(body))
            .bind(now_ms())
            .bind(json_text(expected)),
        };
        let done = done.execute(&self.pool).await.map_err(db)?;
        Ok(done.rows_affected() == 1)
    }

    /// Several swaps, one statement each (see `RunStore::swap_journals_saving`): PostgreSQL's
    /// writers do not queue on one file's lock as SQLite's do, so grouping them gains little.
    pub(super) async fn swap_journals_saving(
        &self,
        swaps: &[JournalSwap<'_>],
    ) -> Result<Vec<bool>, JournalError> {
        crate::store::api::swap_each(self, swaps).await
    }

    /// Swaps `key` and stores `entries` in one statement (see
    /// `RunStore::swap_journal_saving`): every row is an upsert, the state's row guarded by its
    /// expected document (no document: `journals.body = NULL` is never true).
    pub(super) async fn swap_journal_saving(
        &self,
        key: &str,
        expected: Option<&serde_json::Value>,
        body: &serde_json::Value,
        entries: &[(String, serde_json::Value)],
    ) -> Result<bool, JournalError> {
        let mut keys = vec![key];
        let mut bodies = vec![json_text(body)];
        for (entry, document) in entries {
            keys.push(entry);
            bodies.push(json_text(document));
        }
        let done = sqlx::query(
            "INSERT INTO journals (conversation, body, updated_at)
             SELECT k, b, $3 FROM UNNEST($1::TEXT[], $2::TEXT[]) AS t(k, b)
             ON CONFLICT (conversation) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at
             WHERE journals.conversation <> $4 OR journals.body = $5",
        )
        .bind(&keys)
        .bind(&bodies)
        .bind(now_ms())
        .bind(key)
        .bind(expected.map(json_text))
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(done.rows_affected() == entries.len() as u64 + 1)
    }

    pub(super) async fn load_journals(
        &self,
        keys: &[String],
    ) -> Result<Vec<(String, serde_json::Value)>, JournalError> {
        let rows = sqlx::query("SELECT conversation, body FROM journals WHERE conversation = ANY($1)")
            .bind(keys)
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        rows.iter()
            .map(|r| {
                let key: String =
                    r.try_get("conversation").map_err(|e| JournalError::corrupt("journals", e))?;
                let body: String = r.try_get("body").map_err(|e| JournalError::corrupt("journals", e))?;
                Ok((key, serde_json::from_str(&body).map_err(|e| JournalError::corrupt("journals", e))?))
            })
            .collect()
    }

    pub(super) async fn save_journals(
        &self,
        entries: &[(String, serde_json::Value)],
    ) -> Result<(), JournalError> {
        let (keys, bodies): (Vec<&str>, Vec<String>) =
            entries.iter().map(|(k, b)| (k.as_str(), json_text(b))).unzip();
        sqlx::query(
            "INSERT INTO journals (conversation, body, updated_at)
             SELECT k, b, $3 FROM UNNEST($1::TEXT[], $2::TEXT[]) AS t(k, b)
             ON CONFLICT (conversation) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
        )
        .bind(&keys)
        .bind(&bodies)
        .bind(now_ms())
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(())
    }
}
