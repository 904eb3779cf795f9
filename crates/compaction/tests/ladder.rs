//! The recovery ladder through the engine, with a scripted provider (issue 6, F27, F28).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use looprail_compaction::{AutoCompaction, AutoCompactionConfig};
use looprail_loop_core::prelude::*;
use looprail_loop_core::provider::CallPurpose;
use looprail_loop_core::testkit::{RecordingTool, ScriptStep, ScriptedProvider};

const WINDOW: u64 = 4_000; // compaction above 2,800 tokens

fn policy() -> AutoCompaction {
    AutoCompaction::new(AutoCompactionConfig { context_window: WINDOW, ..Default::default() })
}

fn reading_provider(calls: usize) -> ScriptedProvider {
    let mut provider = ScriptedProvider::new("m");
    for i in 0..calls {
        provider = provider.call_tool("read", &format!("{{\"page\": {i}}}"));
    }
    provider.reply_text("done")
}

fn tools(tokens_per_result: usize) -> ToolSet {
    ToolSet::new().with(RecordingTool::new("read").idempotent(true).output("word ".repeat(tokens_per_result)))
}

struct Drive {
    outcome: Outcome,
    events: Vec<Event>,
    run: Run,
}

impl Drive {
    /// The text of the history summary the ladder wrote into the conversation.
    fn summary(&self) -> String {
        self.run
            .messages()
            .iter()
            .find(|m| m.internal.as_ref().is_some_and(|t| t.reason == "history_summary"))
            .and_then(|m| m.joined_text())
            .expect("a history summary in the conversation")
    }
}

async fn drive_with(
    provider: Arc<dyn Provider>,
    tools: ToolSet,
    configure: impl FnOnce(Driver) -> Driver,
) -> Drive {
    let mut run = Run::builder(LoopConfig::default())
        .system("sys")
        .user("read")
        .tools(tools.definitions())
        .policy(policy())
        .build()
        .unwrap();
    let (sink, mut rx) = EventSink::channel();
    let driver = configure(Driver::new(provider, tools).with_events(sink));
    let outcome = driver.drive(&mut run).await.unwrap();
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    Drive { outcome, events, run }
}

fn stages(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::CompactionRun { .. } => Some("compaction".to_owned()),
            Event::RecoveryFired { stage, .. } => Some(stage.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn r1_compacts_then_r2_deep_prunes_then_r3_asks_the_human() {
    // 300-token results: the window re-fills within 20 iterations of each action.
    let d = drive_with(Arc::new(reading_provider(40)), tools(300), |d| d).await;
    assert_eq!(stages(&d.events), ["compaction", "deep_prune", "ask_human"]);
    assert_eq!(d.outcome.state, RunState::WaitingOnHuman, "R3 forces ask_human");
    let compaction = d
        .events
        .iter()
        .find_map(|e| match e {
            Event::CompactionRun { before_tokens, after_tokens, before_messages, after_messages } => {
                Some((*before_tokens, *after_tokens, *before_messages, *after_messages))
            }
            _ => None,
        })
        .unwrap();
    assert!(
        compaction.0 > 2_800 && compaction.1 < compaction.0 && compaction.3 < compaction.2,
        "{compaction:?}"
    );
    let summary = d.summary();
    assert!(summary.contains("- read: word"), "the latest read result is pinned");
    // The human's answer is a new user turn: the ladder starts over.
    let mut run = d.run;
    run.provide_human_reply("keep going").unwrap();
    assert_eq!(run.header().policy["recoveries"], 0);
}

#[tokio::test]
async fn a_slow_filling_run_compacts_once_and_does_not_refire_every_turn() {
    // 80-token results (about 88 tokens an exchange): the window crosses 2,800 tokens after
    // about 32 exchanges; R1 leaves about 500, and refilling takes about 26 more iterations,
    // past the ladder window, so 45 calls compact exactly once.
    let d = drive_with(Arc::new(reading_provider(45)), tools(80), |d| d).await;
    assert_eq!(stages(&d.events), ["compaction"]);
    assert_eq!(d.outcome.final_text, "done");
}

#[tokio::test]
async fn at_most_four_recovery_actions_per_user_turn() {
    let mut config = LoopConfig::default();
    config.guardrails.ask_human_tool = None;
    // Without ask_human, R3 ends the run; use a ladder window of 0 so every crossing is R1.
    let policy = AutoCompaction::new(AutoCompactionConfig {
        context_window: WINDOW,
        ladder_window: 0,
        ..Default::default()
    });
    let tools = tools(400);
    let mut run =
        Run::builder(config).user("read").tools(tools.definitions()).policy(policy).build().unwrap();
    let (sink, mut rx) = EventSink::channel();
    Driver::new(Arc::new(reading_provider(60)), tools).with_events(sink).drive(&mut run).await.unwrap();
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    assert_eq!(stages(&events).len(), 4, "the fifth crossing is skipped: {:?}", stages(&events));
}

#[tokio::test]
async fn a_failed_summary_truncates_deterministically() {
    let provider = reading_provider(14)
        .on_fallback(ScriptStep::Fail(ProviderError::new(ProviderErrorKind::Server, "summary model down")));
    let d = drive_with(Arc::new(provider), tools(300), |d| d).await;
    assert_eq!(stages(&d.events)[0], "compaction");
    let summary = d.summary();
    assert!(summary.contains("No summary could be written"), "{summary:?}");
    assert_eq!(d.outcome.final_text, "done");
}

#[tokio::test]
async fn a_summary_longer_than_what_it_replaces_is_not_used() {
    let provider =
        reading_provider(14).on_fallback(ScriptStep::Reply(ModelResponse::text("m", "blah ".repeat(5_000))));
    let d = drive_with(Arc::new(provider), tools(300), |d| d).await;
    let summary = d.summary();
    assert!(summary.contains("longer than what it replaced"));
}

/// A summarizer that never answers in time.
struct Slow;

#[async_trait]
impl Provider for Slow {
    fn model(&self) -> &str {
        "slow"
    }
    async fn complete(&self, _r: &ModelRequest<'_>) -> Result<ModelResponse, ProviderError> {
        tokio::time::sleep(Duration::from_secs(600)).await;
        Ok(ModelResponse::text("slow", "too late"))
    }
}

#[tokio::test(start_paused = true)]
async fn a_summary_that_times_out_truncates_deterministically() {
    let d = drive_with(Arc::new(reading_provider(14)), tools(300), |d| {
        d.with_summarizer(Arc::new(Slow), Duration::from_secs(30))
    })
    .await;
    let summary = d.summary();
    assert!(summary.contains("timed out"), "{summary:?}");
    assert_eq!(d.outcome.final_text, "done");
}

#[tokio::test]
async fn a_context_window_error_compacts_and_retries_the_call_once() {
    let overflow = || ProviderError::new(ProviderErrorKind::ContextWindowExceeded, "prompt is too long");
    let mut provider = ScriptedProvider::new("m");
    for i in 0..6 {
        provider = provider.call_tool("read", &format!("{{\"page\": {i}}}"));
    }
    let provider = Arc::new(provider.then(ScriptStep::Fail(overflow())).reply_text("fits now"));
    let d = drive_with(provider.clone(), tools(100), |d| d).await;
    assert_eq!(d.outcome.final_text, "fits now");
    assert_eq!(stages(&d.events), ["compaction"]);
    let purposes: Vec<CallPurpose> = provider.calls().iter().map(|c| c.purpose).collect();
    assert_eq!(&purposes[purposes.len() - 3..], [CallPurpose::Turn, CallPurpose::Summary, CallPurpose::Turn]);

    // Twice in one turn: the second overflow ends the run.
    let provider = Arc::new(
        ScriptedProvider::new("m")
            .call_tool("read", "{}")
            .call_tool("read", r#"{"p":1}"#)
            .then(ScriptStep::Fail(overflow()))
            .then(ScriptStep::Fail(overflow())),
    );
    let d = drive_with(provider, tools(100), |d| d).await;
    assert_eq!(d.outcome.state, RunState::Error);
}
