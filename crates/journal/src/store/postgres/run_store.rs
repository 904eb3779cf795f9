//! [`RunStore`] for [`PostgresStore`]: each operation is the backend's own method.

use async_trait::async_trait;

use super::*;
use crate::store::api::RunStore;

#[async_trait]
impl RunStore for PostgresStore {
    fn backend(&self) -> &'static str {
        "postgres"
    }
    fn worker(&self) -> &str {
        &self.worker
    }
    async fn close(&self) {
        self.pool.close().await;
    }
    async fn enqueue(&self, spec: &RunSpec) -> Result<(), JournalError> {
        PostgresStore::enqueue(self, spec).await
    }
    async fn queued_ahead(&self, lane: &str, run_id: &str) -> Result<i64, JournalError> {
        PostgresStore::queued_ahead(self, lane, run_id).await
    }
    async fn set_recipe(&self, run_id: &str, recipe: &serde_json::Value) -> Result<(), JournalError> {
        PostgresStore::set_recipe(self, run_id, recipe).await
    }
    async fn claim_run(&self, run_id: &str) -> Result<bool, JournalError> {
        PostgresStore::claim_run(self, run_id).await
    }
    async fn claim_next(&self, lane: &str) -> Result<Option<String>, JournalError> {
        PostgresStore::claim_next(self, lane).await
    }
    async fn due_lanes(&self) -> Result<Vec<String>, JournalError> {
        PostgresStore::due_lanes(self).await
    }
    async fn set_status(&self, run_id: &str, status: RunStatus) -> Result<(), JournalError> {
        PostgresStore::set_status(self, run_id, status).await
    }
    async fn claim(&self, run_id: &str, from: &[RunStatus]) -> Result<bool, JournalError> {
        PostgresStore::claim(self, run_id, from).await
    }
    async fn take_over(&self, stale_before: i64, max_takeovers: i64) -> Result<Option<String>, JournalError> {
        PostgresStore::take_over(self, stale_before, max_takeovers).await
    }
    async fn heartbeat(&self, run_id: &str, at_ms: i64) -> Result<bool, JournalError> {
        PostgresStore::heartbeat(self, run_id, at_ms).await
    }
    async fn request_cancel(&self, run_id: &str, at_ms: i64) -> Result<(), JournalError> {
        PostgresStore::request_cancel(self, run_id, at_ms).await
    }
    async fn run(&self, run_id: &str) -> Result<Option<RunRow>, JournalError> {
        PostgresStore::run(self, run_id).await
    }
    async fn runs(&self) -> Result<Vec<RunRow>, JournalError> {
        PostgresStore::runs(self).await
    }
    async fn reconcile(
        &self,
        now: i64,
        stale_after: Duration,
        cancel_timeout: Duration,
    ) -> Result<ReconcileReport, JournalError> {
        PostgresStore::reconcile(self, now, stale_after, cancel_timeout).await
    }
    async fn tool_call(&self, run_id: &str, call_id: &str) -> Result<Option<ToolCallRow>, JournalError> {
        PostgresStore::tool_call(self, run_id, call_id).await
    }
    async fn start_tool_call(&self, run_id: &str, call: &ToolCall) -> Result<(), JournalError> {
        PostgresStore::start_tool_call(self, run_id, call).await
    }
    async fn complete_tool_call(&self, run_id: &str, result: &ToolResult) -> Result<(), JournalError> {
        PostgresStore::complete_tool_call(self, run_id, result).await
    }
    async fn resolve_tool_call(
        &self,
        run_id: &str,
        call_id: &str,
        content: &str,
        is_error: bool,
    ) -> Result<(), JournalError> {
        PostgresStore::resolve_tool_call(self, run_id, call_id, content, is_error).await
    }
    async fn unfinished_tool_calls(&self, run_id: &str) -> Result<Vec<(String, String)>, JournalError> {
        PostgresStore::unfinished_tool_calls(self, run_id).await
    }
    async fn forget_tool_call(&self, run_id: &str, call_id: &str) -> Result<(), JournalError> {
        PostgresStore::forget_tool_call(self, run_id, call_id).await
    }
    async fn load_journal(&self, conversation: &str) -> Result<Option<serde_json::Value>, JournalError> {
        PostgresStore::load_journal(self, conversation).await
    }
    async fn save_journal(&self, conversation: &str, body: &serde_json::Value) -> Result<(), JournalError> {
        PostgresStore::save_journal(self, conversation, body).await
    }
    async fn save_checkpoint(
        &self,
        run_id: &str,
        kind: CheckpointKind,
        header: &RunHeader,
        messages: &[Message],
    ) -> Result<(), JournalError> {
        PostgresStore::save_checkpoint(self, run_id, kind, header, messages).await
    }
    async fn load_checkpoint(
        &self,
        run_id: &str,
        resumable_only: bool,
    ) -> Result<Option<StoredCheckpoint>, JournalError> {
        PostgresStore::load_checkpoint(self, run_id, resumable_only).await
    }
}
