//! A provider that reports no usage (some OpenAI-compatible servers) still spends the token
//! budget: the policy estimates each call, and the figure is marked as estimated (issue 14).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use looprail_compaction::{AutoCompaction, AutoCompactionConfig, TiktokenCounter};
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::context::TokenCounter;
use looprail_loop_core::prelude::*;
use looprail_loop_core::testkit::{RecordingTool, ScriptedProvider};
use looprail_tests::drive;

fn looping_provider(calls: usize) -> ScriptedProvider {
    let mut provider = ScriptedProvider::new("m").without_usage();
    for i in 0..calls {
        provider = provider.call_tool("fetch", &format!(r#"{{"page": {i}}}"#));
    }
    provider.reply_text("done")
}

fn tools() -> ToolSet {
    ToolSet::new().with(RecordingTool::new("fetch").output("a page of results ".repeat(50)))
}

#[tokio::test]
async fn a_token_budget_stops_a_run_whose_provider_reports_no_usage() {
    let mut config = LoopConfig::default();
    config.budget.token_budget = Some(3_000);
    for policy in [None, Some(AutoCompaction::new(AutoCompactionConfig::default()))] {
        let builder = Run::builder(config.clone()).user("Fetch every page.");
        let mut run = match policy {
            Some(policy) => builder.policy(policy).build().unwrap(),
            None => builder.build().unwrap(),
        };
        let recorded = drive(&mut run, Driver::new(Arc::new(looping_provider(40)), tools())).await;
        let outcome = &recorded.outcome;
        assert_eq!(outcome.state, RunState::BudgetExceeded, "{:?}", outcome.stop);
        assert!(outcome.usage.is_estimated());
        assert_eq!(outcome.usage.estimated_tokens, outcome.usage.total(), "every figure is an estimate");
        assert!(outcome.tool_calls < 40, "stopped well before the script ran out: {}", outcome.tool_calls);
    }
}

#[tokio::test]
async fn the_compaction_policy_estimates_with_its_tokenizer_and_reported_usage_wins() {
    let counter = TiktokenCounter::default();
    let mut run = Run::builder(LoopConfig::default())
        .system("Be brief.")
        .user("What is the capital of Portugal?")
        .policy(AutoCompaction::new(AutoCompactionConfig::default()))
        .build()
        .unwrap();
    let sent = [Message::system("Be brief."), Message::user("What is the capital of Portugal?")];
    let provider = ScriptedProvider::new("m").without_usage().reply_text("Lisbon, on the Tagus.");
    let recorded = drive(&mut run, Driver::new(Arc::new(provider), ToolSet::new())).await;
    let usage = recorded.outcome.usage;
    let expected_input: u64 = sent.iter().map(|m| counter.count_message(m)).sum();
    assert_eq!(usage.input_tokens, expected_input);
    assert_eq!(usage.output_tokens, counter.count_text("Lisbon, on the Tagus."));
    assert!(usage.is_estimated());

    // A provider that reports usage is charged exactly that, unmarked.
    let mut run = Run::builder(LoopConfig::default()).user("hi").build().unwrap();
    let provider = ScriptedProvider::new("m").usage_per_call(7, 3).reply_text("hello");
    let recorded = drive(&mut run, Driver::new(Arc::new(provider), ToolSet::new())).await;
    assert_eq!((recorded.outcome.usage.input_tokens, recorded.outcome.usage.output_tokens), (7, 3));
    assert!(!recorded.outcome.usage.is_estimated());
}
