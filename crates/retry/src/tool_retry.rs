//! [`RetryingExecutor`]: retries transient failures of idempotent tools (F22).

use async_trait::async_trait;
use looprail_loop_core::event::Event;
use looprail_loop_core::executor::{ExecContext, ToolExecutor, call_once};
use looprail_loop_core::message::{ToolCall, ToolResult};
use looprail_loop_core::tool::ToolSet;

use crate::config::ToolRetryConfig;

/// Runs a batch concurrently; a call whose tool is declared idempotent and whose failure is
/// transient (timeout, connection, 429, 5xx) is tried again after 0.5 s, then 2 s (then 8 s if
/// more attempts are configured), up to 3 attempts in all. Side-effecting tools are never
/// retried; permanent errors are never retried. Each call has its own budget, keyed by its call
/// id, and each retry publishes `agent.tool.retry`. The last error goes to the model as the
/// call's result. No new attempt starts once the run is cancelled.
#[derive(Debug, Clone, Default)]
pub struct RetryingExecutor {
    config: ToolRetryConfig,
}

impl RetryingExecutor {
    /// An executor with these settings.
    pub fn new(config: ToolRetryConfig) -> Self {
        Self { config }
    }

    async fn run(&self, call: &ToolCall, tools: &ToolSet, cx: &ExecContext) -> ToolResult {
        let idempotent = tools.get(&call.name).is_some_and(|tool| tool.idempotent());
        let mut attempt = 1u32;
        loop {
            let (mut result, error) = match call_once(call, tools, cx).await {
                Ok(result) => return result,
                Err(failure) => failure,
            };
            let retry = idempotent
                && error.transient()
                && attempt < self.config.max_attempts
                && !cx.cancel.is_cancelled();
            if !retry {
                if attempt > 1 {
                    result.content = format!("{} (failed {attempt} times)", result.content);
                }
                return result;
            }
            attempt += 1;
            let delay = self.config.delay_before(attempt);
            cx.events.emit(&Event::ToolRetry {
                tool: call.name.clone(),
                call_id: call.id.clone(),
                attempt,
                delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                cause: error.message.clone(),
            });
            tokio::time::sleep(delay).await;
        }
    }
}

#[async_trait]
impl ToolExecutor for RetryingExecutor {
    async fn execute(&self, calls: &[ToolCall], tools: &ToolSet, cx: &ExecContext) -> Vec<ToolResult> {
        futures_util::future::join_all(calls.iter().map(|call| self.run(call, tools, cx))).await
    }
}
