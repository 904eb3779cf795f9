//! [`RunStore`](super::RunStore) for a backend whose inherent methods carry the same names
//! and signatures: one macro, so both backends delegate identically.

/// Implements `RunStore` for `$store` (which has `pool` and `worker` fields) by calling its
/// inherent methods; `$name` is what `backend()` answers.
macro_rules! delegate_run_store {
    ($store:ident, $name:literal) => {
        #[async_trait::async_trait]
        impl crate::store::api::RunStore for $store {
            fn backend(&self) -> &'static str {
                $name
            }
            fn worker(&self) -> &str {
                &self.worker
            }
            async fn close(&self) {
                self.pool.close().await;
            }
            async fn enqueue(&self, spec: &RunSpec) -> Result<(), JournalError> {
                $store::enqueue(self, spec).await
            }
            async fn queued_ahead(&self, lane: &str, run_id: &str) -> Result<i64, JournalError> {
                $store::queued_ahead(self, lane, run_id).await
            }
            async fn set_recipe(&self, run_id: &str, recipe: &serde_json::Value) -> Result<(), JournalError> {
                $store::set_recipe(self, run_id, recipe).await
            }
            async fn claim_run(&self, run_id: &str) -> Result<bool, JournalError> {
                $store::claim_run(self, run_id).await
            }
            async fn claim_next(&self, lane: &str) -> Result<Option<String>, JournalError> {
                $store::claim_next(self, lane).await
            }
            async fn due_lanes(&self) -> Result<Vec<String>, JournalError> {
                $store::due_lanes(self).await
            }
            async fn set_status(&self, run_id: &str, status: RunStatus) -> Result<(), JournalError> {
                $store::set_status(self, run_id, status).await
            }
            async fn claim(&self, run_id: &str, from: &[RunStatus]) -> Result<bool, JournalError> {
                $store::claim(self, run_id, from).await
            }
            async fn take_over(
                &self,
                stale_before: i64,
                max_takeovers: i64,
            ) -> Result<Option<String>, JournalError> {
                $store::take_over(self, stale_before, max_takeovers).await
            }
            async fn heartbeat(&self, run_id: &str, at_ms: i64) -> Result<bool, JournalError> {
                $store::heartbeat(self, run_id, at_ms).await
            }
            async fn request_cancel(&self, run_id: &str, at_ms: i64) -> Result<(), JournalError> {
                $store::request_cancel(self, run_id, at_ms).await
            }
            async fn run(&self, run_id: &str) -> Result<Option<RunRow>, JournalError> {
                $store::run(self, run_id).await
            }
            async fn runs(&self) -> Result<Vec<RunRow>, JournalError> {
                $store::runs(self).await
            }
            async fn reconcile(
                &self,
                now: i64,
                stale_after: Duration,
                cancel_timeout: Duration,
            ) -> Result<ReconcileReport, JournalError> {
                $store::reconcile(self, now, stale_after, cancel_timeout).await
            }
            async fn tool_call(
                &self,
                run_id: &str,
                call_id: &str,
            ) -> Result<Option<ToolCallRow>, JournalError> {
                $store::tool_call(self, run_id, call_id).await
            }
            async fn start_tool_call(&self, run_id: &str, call: &ToolCall) -> Result<(), JournalError> {
                $store::start_tool_call(self, run_id, call).await
            }
            async fn complete_tool_call(
                &self,
                run_id: &str,
                result: &ToolResult,
            ) -> Result<(), JournalError> {
                $store::complete_tool_call(self, run_id, result).await
            }
            async fn resolve_tool_call(
                &self,
                run_id: &str,
                call_id: &str,
                content: &str,
                is_error: bool,
            ) -> Result<(), JournalError> {
                $store::resolve_tool_call(self, run_id, call_id, content, is_error).await
            }
            async fn unfinished_tool_calls(
                &self,
                run_id: &str,
            ) -> Result<Vec<(String, String)>, JournalError> {
                $store::unfinished_tool_calls(self, run_id).await
            }
            async fn forget_tool_call(&self, run_id: &str, call_id: &str) -> Result<(), JournalError> {
                $store::forget_tool_call(self, run_id, call_id).await
            }
            async fn load_journal(
                &self,
                conversation: &str,
            ) -> Result<Option<serde_json::Value>, JournalError> {
                $store::load_journal(self, conversation).await
            }
            async fn load_journals(
                &self,
                keys: &[String],
            ) -> Result<Vec<(String, serde_json::Value)>, JournalError> {
                $store::load_journals(self, keys).await
            }
            async fn save_journals(
                &self,
                entries: &[(String, serde_json::Value)],
            ) -> Result<(), JournalError> {
                $store::save_journals(self, entries).await
            }
            async fn save_journal(
                &self,
                conversation: &str,
                body: &serde_json::Value,
            ) -> Result<(), JournalError> {
                $store::save_journal(self, conversation, body).await
            }
            async fn swap_journal(
                &self,
                key: &str,
                expected: Option<&serde_json::Value>,
                body: &serde_json::Value,
            ) -> Result<bool, JournalError> {
                $store::swap_journal(self, key, expected, body).await
            }
            async fn swap_journal_saving(
                &self,
                key: &str,
                expected: Option<&serde_json::Value>,
                body: &serde_json::Value,
                entries: &[(String, serde_json::Value)],
            ) -> Result<bool, JournalError> {
                $store::swap_journal_saving(self, key, expected, body, entries).await
            }
            async fn swap_journals_saving(
                &self,
                swaps: &[JournalSwap<'_>],
            ) -> Result<Vec<bool>, JournalError> {
                $store::swap_journals_saving(self, swaps).await
            }
            async fn save_checkpoint(
                &self,
                run_id: &str,
                kind: CheckpointKind,
                header: &RunHeader,
                messages: &[Message],
            ) -> Result<(), JournalError> {
                $store::save_checkpoint(self, run_id, kind, header, messages).await
            }
            async fn load_checkpoint(
                &self,
                run_id: &str,
                resumable_only: bool,
            ) -> Result<Option<StoredCheckpoint>, JournalError> {
                $store::load_checkpoint(self, run_id, resumable_only).await
            }
        }
    };
}

pub(super) use delegate_run_store;
