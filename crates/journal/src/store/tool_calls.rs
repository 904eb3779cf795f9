//! The tool-call envelope (F34): a row per call, started before and completed after it runs.

use sqlx::Row;

use super::*;

impl SqliteStore {
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
}
