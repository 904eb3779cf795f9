//! A server that accepts the request and never answers cannot hold a run past its hard time
//! limit (F6) or past a cancel request (F7): the driver interrupts the model call (issue 14).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::prelude::*;
use looprail_tests::drive;
use tokio_util::sync::CancellationToken;

/// Takes the request and never answers.
struct Silent;

#[async_trait]
impl Provider for Silent {
    fn model(&self) -> &str {
        "silent"
    }
    async fn complete(&self, _request: &ModelRequest<'_>) -> Result<ModelResponse, ProviderError> {
        std::future::pending().await
    }
}

#[tokio::test(start_paused = true)]
async fn the_hard_time_limit_interrupts_a_model_call_that_never_returns() {
    let mut config = LoopConfig::default();
    config.budget.soft_time_limit_secs = 30;
    config.budget.hard_time_limit_secs = 60;
    let mut run = Run::builder(config).user("hello?").build().unwrap();
    let started = tokio::time::Instant::now();
    let recorded = drive(&mut run, Driver::new(Arc::new(Silent), ToolSet::new())).await;
    assert_eq!(recorded.outcome.state, RunState::TimedOut, "{:?}", recorded.outcome.stop);
    assert!(!recorded.outcome.final_text.is_empty(), "a deterministic reply, no further model call");
    assert_eq!(started.elapsed(), Duration::from_secs(60), "cut exactly at the hard limit");
}

#[tokio::test(start_paused = true)]
async fn a_cancel_request_interrupts_a_model_call_that_never_returns() {
    let mut run = Run::builder(LoopConfig::default()).user("hello?").build().unwrap();
    let cancel = CancellationToken::new();
    let later = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(5)).await;
        later.cancel();
    });
    let started = tokio::time::Instant::now();
    let recorded = drive(&mut run, Driver::new(Arc::new(Silent), ToolSet::new()).with_cancel(cancel)).await;
    assert_eq!(recorded.outcome.state, RunState::Cancelled);
    assert_eq!(started.elapsed(), Duration::from_secs(5));
}

/// A side-effecting tool that hangs.
struct Stuck;

#[async_trait]
impl Tool for Stuck {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new("transfer", "moves money", serde_json::json!({"type": "object"}))
    }
    async fn call(
        &self,
        _args: serde_json::Value,
        _cx: looprail_loop_core::tool::ToolContext,
    ) -> Result<looprail_loop_core::tool::ToolOutput, ToolError> {
        std::future::pending().await
    }
}

#[tokio::test(start_paused = true)]
async fn a_tool_call_past_its_timeout_is_given_up_with_an_unknown_outcome_for_side_effects() {
    let mut config = LoopConfig::default();
    config.limits.tool_timeout_secs = 5;
    let tools = ToolSet::new().with(Stuck);
    let provider = looprail_loop_core::testkit::ScriptedProvider::new("m")
        .call_tool("transfer", "{}")
        .reply_text("I could not confirm the transfer.");
    let mut run = Run::builder(config).user("pay the invoice").tools(tools.definitions()).build().unwrap();
    let started = tokio::time::Instant::now();
    let recorded = drive(&mut run, Driver::new(Arc::new(provider), tools)).await;
    assert_eq!(recorded.outcome.state, RunState::Completed);
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    let result = run.messages().iter().flat_map(Message::tool_results).next().unwrap();
    assert!(result.is_error);
    assert!(result.content.contains("did not finish within 5 s"), "{}", result.content);
    assert!(result.content.contains("may or may not have taken effect"), "{}", result.content);
}
