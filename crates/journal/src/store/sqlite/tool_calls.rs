//! The tool-call envelope (F34): a row per call, started before and completed after it runs.

use sqlx::Row;

use super::*;
use crate::store::common::check_holder;

impl SqliteStore {
    /// The envelope row of a call.
    pub(super) async fn tool_call(
        &self,
        run_id: &str,
        call_id: &str,
    ) -> Result<Option<ToolCallRow>, JournalError> {
        let row = sqlx::query(
            "SELECT tool, started_at, result, attempts FROM tool_calls WHERE run_id = ? AND tool_call_id = ?",
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
            attempts: row.try_get("attempts").map_err(|e| JournalError::corrupt(&what, e))?,
            completed,
        }))
    }

    /// Writes `started_at` before a tool runs (committed before the tool is called).
    pub(super) async fn start_tool_call(&self, run_id: &str, call: &ToolCall) -> Result<(), JournalError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(self.db())?;
        let row = sqlx::query("SELECT status, worker FROM runs WHERE run_id = ?")
            .bind(run_id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(self.db())?;
        if let Some(row) = row {
            let get = |e: sqlx::Error| JournalError::corrupt("runs", e);
            let status: String = row.try_get("status").map_err(get)?;
            check_holder(run_id, &status, row.try_get("worker").map_err(get)?, &self.worker)?;
        }
        sqlx::query(
            "INSERT INTO tool_calls (run_id, tool_call_id, tool, arguments, started_at) VALUES (?, ?, ?, ?, ?)
             ON CONFLICT (run_id, tool_call_id) DO UPDATE SET started_at = excluded.started_at, attempts = tool_calls.attempts + 1",
        )
        .bind(run_id)
        .bind(&call.id)
        .bind(&call.name)
        .bind(&call.arguments)
        .bind(now_ms())
        .execute(&mut *tx)
        .await
        .map_err(self.db())?;
        tx.commit().await.map_err(self.db())
    }

    /// Writes `completed_at` and the result after the tool ran.
    pub(super) async fn complete_tool_call(
        &self,
        run_id: &str,
        result: &ToolResult,
    ) -> Result<(), JournalError> {
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
    pub(super) async fn resolve_tool_call(
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

    /// Tool calls of a run that started and never completed (what a resume-unsafe halt waits
    /// on), as `(call id, tool)`.
    pub(super) async fn unfinished_tool_calls(
        &self,
        run_id: &str,
    ) -> Result<Vec<(String, String)>, JournalError> {
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
    pub(super) async fn forget_tool_call(&self, run_id: &str, call_id: &str) -> Result<(), JournalError> {
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
}
