//! The idempotency envelope (F34): every tool call is recorded as started before it runs and
//! completed with its result after, keyed by (run id, tool call id).

use std::sync::Arc;

use async_trait::async_trait;
use looprail_loop_core::event::Event;
use looprail_loop_core::executor::{ExecContext, ParallelExecutor, ToolExecutor};
use looprail_loop_core::guard::{Decision, Guard, TurnView};
use looprail_loop_core::message::{ToolCall, ToolResult};
use looprail_loop_core::outcome::StopCause;
use looprail_loop_core::tool::ToolSet;

use crate::store::SharedStore;

/// The flag on the result of a call that was not run because running it again could repeat a
/// side effect.
pub const FLAG_RESUME_UNSAFE: &str = "resume-unsafe";

/// Wraps an executor with the envelope. For each call:
///
/// - completed before (a resumed run) → the stored result is replayed, the tool is not called;
/// - started but never completed (the process died mid-call) → re-run if the tool is
///   idempotent; otherwise not run, and its result is flagged [`FLAG_RESUME_UNSAFE`] so
///   [`ResumeSafety`] halts the run for a human;
/// - new → `started_at` is committed, the tool runs, `completed_at` and the result are stored.
pub struct EnvelopeExecutor {
    store: SharedStore,
    run_id: String,
    inner: Arc<dyn ToolExecutor>,
}

impl std::fmt::Debug for EnvelopeExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvelopeExecutor").field("run_id", &self.run_id).finish()
    }
}

impl EnvelopeExecutor {
    /// An envelope around the parallel executor.
    pub fn new(store: SharedStore, run_id: impl Into<String>) -> Self {
        Self { store, run_id: run_id.into(), inner: Arc::new(ParallelExecutor) }
    }

    /// Uses another inner executor (a retrying one, say).
    #[must_use]
    pub fn with_inner(mut self, inner: Arc<dyn ToolExecutor>) -> Self {
        self.inner = inner;
        self
    }
}

#[async_trait]
impl ToolExecutor for EnvelopeExecutor {
    async fn execute(&self, calls: &[ToolCall], tools: &ToolSet, cx: &ExecContext) -> Vec<ToolResult> {
        let mut results = Vec::with_capacity(calls.len());
        let mut runnable = Vec::new();
        for call in calls {
            match self.store.tool_call(&self.run_id, &call.id).await {
                Ok(Some(row)) => match row.completed {
                    Some(stored) => results.push(stored),
                    None if tools.get(&call.name).is_some_and(|t| t.idempotent()) => runnable.push(call.clone()),
                    None => results.push(
                        ToolResult::error(
                            &call.id,
                            format!("Not run: `{}` may already have run before an interruption; a human must check.", call.name),
                        )
                        .with_flag(FLAG_RESUME_UNSAFE),
                    ),
                },
                Ok(None) => runnable.push(call.clone()),
                Err(error) => results.push(ToolResult::error(&call.id, format!("Error: the call could not be recorded ({error}); it was not run."))),
            }
        }
        let mut recorded = Vec::with_capacity(runnable.len());
        for call in runnable {
            match self.store.start_tool_call(&self.run_id, &call).await {
                Ok(()) => recorded.push(call),
                Err(error) => results.push(ToolResult::error(
                    &call.id,
                    format!("Error: the call could not be recorded ({error}); it was not run."),
                )),
            }
        }
        let ran = self.inner.execute(&recorded, tools, cx).await;
        for result in &ran {
            if let Err(error) = self.store.complete_tool_call(&self.run_id, result).await {
                tracing::warn!(call_id = %result.call_id, %error, "a tool result could not be recorded; a resume may run the call again");
            }
        }
        results.extend(ran);
        results
    }
}

/// Halts a run to `waiting_on_human` when the envelope refused to re-run a side-effecting call,
/// publishing `agent_run.resume_unsafe`.
#[derive(Debug, Clone)]
pub struct ResumeSafety {
    run_id: String,
}

impl ResumeSafety {
    /// The guard for `run_id`.
    pub fn new(run_id: impl Into<String>) -> Self {
        Self { run_id: run_id.into() }
    }
}

impl Guard for ResumeSafety {
    fn name(&self) -> &str {
        "resume_safety"
    }

    fn after_tools(
        &mut self,
        _view: &TurnView<'_>,
        calls: &[ToolCall],
        results: &[ToolResult],
    ) -> Vec<Decision> {
        let Some(result) = results.iter().find(|r| r.flag.as_deref() == Some(FLAG_RESUME_UNSAFE)) else {
            return Vec::new();
        };
        let tool = calls.iter().find(|c| c.id == result.call_id).map_or_else(String::new, |c| c.name.clone());
        vec![
            Decision::Emit(Event::RunResumeUnsafe {
                run_id: self.run_id.clone(),
                call_id: result.call_id.clone(),
                reason: "side_effect_interrupted".into(),
            }),
            Decision::Stop(StopCause::ResumeUnsafe { call_id: result.call_id.clone(), tool }),
        ]
    }
}
