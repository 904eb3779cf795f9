//! Cost and time limits replayed from a log's own record of its replies (each request's time,
//! the model that answered, the usage it reported): a replay stops where the run would have,
//! and a log that records nothing replays as before.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail_guardrails::DegenerateReplies;
use looprail_guardrails::replay::{RecordedReply, ReplayReport, Timeline, replay_recorded};
use looprail_loop_core::config::{BudgetScope, LoopConfig};
use looprail_loop_core::message::{Message, ToolCall, ToolResult};
use looprail_loop_core::price::ModelPrice;
use looprail_loop_core::provider::Usage;
use proptest::prelude::*;

/// A prompt, then `calls` distinct calls each with its result, then a final answer; with
/// `prompt_again_at`, a second user prompt before that call.
fn log(calls: usize, prompt_again_at: Option<usize>) -> Vec<Message> {
    let mut messages = vec![Message::system("You fix bugs."), Message::user("Fix the build.")];
    for n in 0..calls {
        if prompt_again_at == Some(n) {
            messages.push(Message::assistant("Done with the first part."));
            messages.push(Message::user("Now the tests."));
        }
        let id = format!("c{n}");
        let call = ToolCall::new(&id, "read", format!("{{\"path\":\"f{n}.rs\"}}"));
        messages.push(Message::assistant_with_calls(None, vec![call]));
        messages.push(Message::tool_result(ToolResult::ok(&id, format!("line {n}"))));
    }
    messages.push(Message::assistant("Fixed."));
    messages
}

fn replay(messages: &[Message], config: &LoopConfig, timeline: &Timeline) -> ReplayReport {
    let mut guards = looprail_loop_core::guards::defaults(config);
    let tokens = vec![10; messages.len()];
    let replies = DegenerateReplies::new(Default::default());
    replay_recorded(messages, &mut guards, config, &tokens, &replies, timeline)
}

fn assistants(messages: &[Message]) -> usize {
    messages.iter().filter(|m| m.role == looprail_loop_core::message::Role::Assistant).count()
}

/// Replies a minute apart, each reporting `input` and 1,000 output tokens of `model`.
fn timeline(n: usize, model: &str, input: u64) -> Timeline {
    Timeline::new(
        (0..n)
            .map(|k| RecordedReply {
                sent_ms: Some(1_700_000_000_000 + 60_000 * k as i64),
                model: Some(model.to_owned()),
                usage: Some(Usage { input_tokens: input, output_tokens: 1_000, ..Usage::default() }),
            })
            .collect(),
    )
}

fn priced(limit: f64) -> LoopConfig {
    let mut config = LoopConfig::default();
    // 1 per million input tokens, 10 per million output: a reply of 100k in and 1k out costs 0.11.
    let price = ModelPrice { input_per_mtok: 1.0, output_per_mtok: 10.0, ..ModelPrice::default() };
    config.prices = config.prices.with("claude-sonnet-4-5", price);
    config.budget.cost_limit = Some(limit);
    // Only the cost decides here.
    (config.budget.soft_time_limit_secs, config.budget.hard_time_limit_secs) = (0, 0);
    config
}

#[test]
fn a_cost_limit_stops_the_replay_at_the_reply_that_crosses_it() {
    let messages = log(20, None);
    let recorded = timeline(assistants(&messages), "claude-sonnet-4-5-20250929", 100_000);
    let report = replay(&messages, &priced(0.5), &recorded);
    assert_eq!(report.stop_reason.as_deref(), Some("limit:cost_limit"), "{report:?}");
    // 0.11 a reply: 5 replies (0.55) spent, the 6th never made; its call index is 4.
    assert_eq!(report.stopped_at, Some(4));
    assert!(report.fallback_reply, "a limit is answered with the fallback reply");
    let unpriced = replay(&messages, &priced(0.5), &timeline(assistants(&messages), "other-model", 100_000));
    assert_eq!(unpriced.stop_reason, None, "a model without a price costs nothing");
    let unrecorded = replay(&messages, &priced(0.5), &Timeline::default());
    assert_eq!(unrecorded.stop_reason, None, "estimates of 10 tokens a message stay far below 0.5");
}

#[test]
fn time_limits_stop_the_replay_where_the_run_passed_them() {
    let messages = log(20, None);
    let recorded = timeline(assistants(&messages), "m", 10);
    let mut config = LoopConfig::default();
    config.budget.hard_time_limit_secs = 0;
    config.budget.soft_time_limit_secs = 5 * 60;
    let report = replay(&messages, &config, &recorded);
    // Requests a minute apart: the 6th goes out at 5 minutes.
    assert_eq!(report.stop_reason.as_deref(), Some("limit:soft_time_limit"));
    assert_eq!(report.stopped_at, Some(4));
    config.budget.soft_time_limit_secs = 0;
    config.budget.hard_time_limit_secs = 10 * 60;
    assert_eq!(replay(&messages, &config, &recorded).stop_reason.as_deref(), Some("limit:timeout"));
    assert_eq!(replay(&messages, &config, &Timeline::default()).stop_reason, None, "no time recorded");
}

#[test]
fn a_stretch_limit_counts_from_the_stretchs_first_request() {
    // 8 calls, then a new prompt, then 8 more: each stretch lasts 8 minutes.
    let messages = log(16, Some(8));
    let recorded = timeline(assistants(&messages), "m", 10);
    let mut config = LoopConfig::default();
    config.budget.soft_time_limit_secs = 0;
    config.budget.hard_time_limit_secs = 10 * 60;
    assert_eq!(replay(&messages, &config, &recorded).stop_reason.as_deref(), Some("limit:timeout"));
    config.budget.scope = BudgetScope::Stretch;
    assert_eq!(replay(&messages, &config, &recorded).stop_reason, None, "no stretch reaches 10 minutes");
}

proptest! {
    /// A clock that steps back never makes time run backwards, and the time of a reply is never
    /// before the run's start.
    #[test]
    fn recorded_time_never_runs_backwards(times in proptest::collection::vec(proptest::option::of(0i64..10_000_000), 0..40)) {
        let recorded = Timeline::new(times.iter().map(|t| RecordedReply { sent_ms: *t, ..Default::default() }).collect());
        let mut before = std::time::Duration::ZERO;
        for (k, time) in times.iter().enumerate() {
            let at = recorded.elapsed(k);
            if time.is_some() {
                prop_assert!(at >= before);
                before = at;
            }
        }
    }
}
