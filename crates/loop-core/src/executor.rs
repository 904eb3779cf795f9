//! The tool-execution seam: [`ToolExecutor`] runs a batch; [`ParallelExecutor`] runs every
//! call of a batch concurrently. Retry and idempotency-envelope executors wrap this seam.

use std::panic::AssertUnwindSafe;

use async_trait::async_trait;
use futures_util::FutureExt;
use tokio_util::sync::CancellationToken;

use crate::engine::tool_calls::{FLAG_INVALID_ARGUMENTS, FLAG_UNKNOWN_TOOL, parse_arguments};
use crate::event::EventSink;
use crate::message::{ToolCall, ToolResult};
use crate::tool::{ToolContext, ToolError, ToolErrorKind, ToolSet};

/// What an executor gets besides the calls.
#[derive(Debug, Clone, Default)]
pub struct ExecContext {
    /// The run's cancellation token (tools may watch it; nothing is killed).
    pub cancel: CancellationToken,
    /// Where to publish events such as `agent.tool.retry`.
    pub events: EventSink,
    /// How long one tool call may take (`limits.tool_timeout_secs`); `None`: no limit.
    pub tool_timeout: Option<std::time::Duration>,
}

/// Runs a batch of tool calls and returns one result per call.
#[async_trait]
pub trait ToolExecutor: Send + Sync {
    /// Executes `calls`; results may come in any order but each call must get one.
    async fn execute(&self, calls: &[ToolCall], tools: &ToolSet, cx: &ExecContext) -> Vec<ToolResult>;
}

/// Renders a tool error the way the model sees it.
pub fn error_result(call_id: &str, error: &ToolError) -> ToolResult {
    ToolResult::error(call_id, format!("Error: {}", error.message))
}

/// Runs one call once: looks the tool up, parses the arguments, calls it, and turns every
/// failure (a panic included) into an error result. Returns the raw error too, so wrappers can
/// decide whether to retry.
pub async fn call_once(
    call: &ToolCall,
    tools: &ToolSet,
    cx: &ExecContext,
) -> Result<ToolResult, (ToolResult, ToolError)> {
    use tracing::Instrument;
    let provider_id = call.wire_id.as_deref().filter(|id| !id.is_empty()).unwrap_or(&call.id);
    let span = crate::telemetry::tool_span(&call.name, provider_id, &call.id);
    let result = call_unobserved(call, tools, cx).instrument(span.clone()).await;
    if let Err((_, error)) = &result {
        let kind = crate::event::wire_name(&error.kind);
        crate::telemetry::record_error(&span, kind.as_deref().unwrap_or("tool_error"));
    }
    result
}

async fn call_unobserved(
    call: &ToolCall,
    tools: &ToolSet,
    cx: &ExecContext,
) -> Result<ToolResult, (ToolResult, ToolError)> {
    let Some(tool) = tools.get(&call.name) else {
        let error = ToolError::failed(format!("there is no tool named `{}`", call.name));
        return Err((error_result(&call.id, &error).with_flag(FLAG_UNKNOWN_TOOL), error));
    };
    let args = match parse_arguments(call) {
        Ok(args) => args,
        Err(message) => {
            let error = ToolError::invalid_arguments(message.clone());
            return Err((ToolResult::error(&call.id, message).with_flag(FLAG_INVALID_ARGUMENTS), error));
        }
    };
    let context =
        ToolContext { call_id: call.id.clone(), cancel: cx.cancel.clone(), events: cx.events.clone() };
    let running = AssertUnwindSafe(tool.call(args, context)).catch_unwind();
    let outcome = match cx.tool_timeout {
        Some(limit) => match tokio::time::timeout(limit, running).await {
            Ok(outcome) => outcome,
            Err(_) => {
                // The call was dropped mid-way: for a side-effecting tool, whether its effect
                // happened is unknown, and the model is told so.
                let unknown = if tool.idempotent() {
                    ""
                } else {
                    "; it may or may not have taken effect: check before calling it again"
                };
                let error = ToolError::new(
                    ToolErrorKind::Timeout,
                    format!("the tool `{}` did not finish within {} s{unknown}", call.name, limit.as_secs()),
                );
                return Err((error_result(&call.id, &error), error));
            }
        },
        None => running.await,
    };
    match outcome {
        Ok(Ok(output)) => Ok(ToolResult::ok(&call.id, output.content)),
        Ok(Err(error)) => Err((error_result(&call.id, &error), error)),
        Err(_) => {
            let error = ToolError::failed(format!("the tool `{}` crashed", call.name));
            Err((error_result(&call.id, &error), error))
        }
    }
}

/// Runs every call of a batch concurrently, once each.
#[derive(Debug, Clone, Copy, Default)]
pub struct ParallelExecutor;

#[async_trait]
impl ToolExecutor for ParallelExecutor {
    async fn execute(&self, calls: &[ToolCall], tools: &ToolSet, cx: &ExecContext) -> Vec<ToolResult> {
        let runs = calls.iter().map(|call| async move {
            match call_once(call, tools, cx).await {
                Ok(result) | Err((result, _)) => result,
            }
        });
        futures_util::future::join_all(runs).await
    }
}
