//! One scenario per loop-core behaviour (issue 2), through the public API: the outcome, the
//! state sequence and the events.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::engine::{EngineError, IterationDecision, MaxIterationsHandler};
use looprail_loop_core::prelude::*;
use looprail_loop_core::provider::CallPurpose;
use looprail_loop_core::testkit::{RecordingTool, ScriptStep, ScriptedProvider};
use looprail_loop_core::tool::ToolErrorKind;
use looprail_tests::{Recorded, SlowTool, drive};

fn tools_with(names: &[&str]) -> (ToolSet, Vec<RecordingTool>) {
    let mut set = ToolSet::new();
    let mut handles = Vec::new();
    for name in names {
        let tool = RecordingTool::new(*name).idempotent(true).output(format!("{name} result"));
        set = set.with(tool.clone());
        handles.push(tool);
    }
    (set, handles)
}

async fn run_script(
    config: LoopConfig,
    provider: ScriptedProvider,
    tools: ToolSet,
) -> (Recorded, Arc<ScriptedProvider>) {
    let provider = Arc::new(provider);
    let mut run = Run::builder(config).system("sys").user("task").tools(tools.definitions()).build().unwrap();
    let recorded = drive(&mut run, Driver::new(provider.clone(), tools)).await;
    (recorded, provider)
}

#[tokio::test]
async fn a_tool_loop_completes_with_the_models_answer() {
    let (tools, handles) = tools_with(&["search"]);
    let provider = ScriptedProvider::new("m").call_tool("search", r#"{"q": 1}"#).reply_text("answer");
    let (rec, _) = run_script(LoopConfig::default(), provider, tools).await;
    assert_eq!(rec.outcome.state, RunState::Completed);
    assert_eq!(rec.outcome.stop, StopCause::Finished);
    assert_eq!(rec.outcome.final_text, "answer");
    assert_eq!(rec.outcome.fallback, None);
    assert_eq!((rec.outcome.turns, rec.outcome.tool_calls), (2, 1));
    assert_eq!(rec.outcome.usage.total(), 240);
    assert_eq!(handles[0].call_count(), 1);
    assert_eq!(
        rec.states(),
        [RunState::Running, RunState::WaitingForTool, RunState::Running, RunState::Completed]
    );
    assert_eq!(rec.names().first(), Some(&"agent_run.started"));
    assert_eq!(rec.names().last(), Some(&"agent_run.completed"));
    assert!(rec.events.contains(&Event::TurnStarted { turn: 2, cap: 50 }));
}

#[tokio::test]
async fn parallel_tool_calls_run_as_one_batch_and_results_keep_call_order() {
    let (tools, handles) = tools_with(&["a", "b"]);
    let provider = ScriptedProvider::new("m").call_tools(&[("b", "{}"), ("a", "{}")]).reply_text("done");
    let provider = Arc::new(provider);
    let mut run = Run::builder(LoopConfig::default()).user("go").tools(tools.definitions()).build().unwrap();
    let rec = drive(&mut run, Driver::new(provider, tools)).await;
    assert_eq!(rec.outcome.final_text, "done");
    assert_eq!(handles.iter().map(RecordingTool::call_count).collect::<Vec<_>>(), [1, 1]);
    let results: Vec<_> =
        run.messages().iter().flat_map(Message::tool_results).map(|r| r.content.clone()).collect();
    assert_eq!(results, ["b result", "a result"]);
}

#[tokio::test(start_paused = true)]
async fn f1_the_first_matching_check_wins_time_limit_before_budget() {
    // After the first turn both the hard time limit (61 s > 60 s) and the one-turn budget are
    // exhausted at the same boundary: the time limit is checked first and wins.
    let mut config = LoopConfig::default();
    config.budget.max_turns = Some(1);
    config.budget.soft_time_limit_secs = 0;
    config.budget.hard_time_limit_secs = 60;
    let tools = ToolSet::new().with(SlowTool::new("slow", Duration::from_secs(61)));
    let provider = ScriptedProvider::new("m").call_tool("slow", "{}").reply_text("x");
    let (rec, _) = run_script(config, provider, tools).await;
    assert_eq!(rec.outcome.stop, StopCause::Limit { reason: LimitReason::Timeout });
    assert_eq!(rec.count("limits_reached"), 1);
}

#[tokio::test]
async fn f1_cancellation_is_checked_before_the_budgets() {
    let token = tokio_util::sync::CancellationToken::new();
    let tools = ToolSet::new().with(CancelOnCall { token: token.clone() });
    let mut config = LoopConfig::default();
    config.budget.max_turns = Some(1);
    let provider = Arc::new(ScriptedProvider::new("m").call_tool("cancel_me", "{}").reply_text("x"));
    let mut run = Run::builder(config).user("go").tools(tools.definitions()).build().unwrap();
    let rec = drive(&mut run, Driver::new(provider, tools).with_cancel(token)).await;
    assert_eq!(rec.outcome.stop, StopCause::Cancelled);
    assert_eq!(rec.count("limits_reached"), 0);
}

#[derive(Clone)]
struct CancelOnCall {
    token: tokio_util::sync::CancellationToken,
}

#[async_trait::async_trait]
impl Tool for CancelOnCall {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new("cancel_me", "requests cancellation", serde_json::json!({"type": "object"}))
    }
    async fn call(
        &self,
        _a: serde_json::Value,
        _c: looprail_loop_core::tool::ToolContext,
    ) -> Result<looprail_loop_core::tool::ToolOutput, ToolError> {
        self.token.cancel();
        Ok("side effect committed".into())
    }
}

#[tokio::test]
async fn f7_cancelled_runs_keep_completed_results_and_write_no_apology() {
    let token = tokio_util::sync::CancellationToken::new();
    let tools = ToolSet::new().with(CancelOnCall { token: token.clone() });
    let provider = Arc::new(ScriptedProvider::new("m").call_tool("cancel_me", "{}").reply_text("never"));
    let mut run = Run::builder(LoopConfig::default()).user("go").tools(tools.definitions()).build().unwrap();
    let rec = drive(&mut run, Driver::new(provider.clone(), tools).with_cancel(token)).await;
    assert_eq!(rec.outcome.state, RunState::Cancelled);
    assert_eq!(rec.outcome.final_text, "");
    assert_eq!(rec.outcome.fallback, None);
    assert_eq!(provider.calls().len(), 1, "no model call after the cancel boundary");
    let last = run.messages().last().unwrap();
    assert_eq!(last.tool_results().next().unwrap().content, "side effect committed");
    assert_eq!(rec.names().last(), Some(&"agent_run.cancelled"));
}

#[tokio::test]
async fn f7_cancel_before_start_makes_no_model_call() {
    let token = tokio_util::sync::CancellationToken::new();
    token.cancel();
    let provider = Arc::new(ScriptedProvider::new("m").reply_text("x"));
    let mut run = Run::builder(LoopConfig::default()).user("go").build().unwrap();
    let rec = drive(&mut run, Driver::new(provider.clone(), ToolSet::new()).with_cancel(token)).await;
    assert_eq!(rec.outcome.state, RunState::Cancelled);
    assert!(provider.calls().is_empty());
}

#[tokio::test]
async fn f2_iteration_ceiling_defaults_to_50_then_fallback() {
    let (tools, handles) = tools_with(&["t"]);
    let mut provider = ScriptedProvider::new("m");
    for i in 0..60 {
        provider = provider.call_tool("t", &format!("{{\"i\": {i}}}"));
    }
    let (rec, provider) = run_script(LoopConfig::default(), provider, tools).await;
    assert_eq!(rec.outcome.state, RunState::MaxSteps);
    assert_eq!(rec.outcome.stop, StopCause::Limit { reason: LimitReason::MaxIterations });
    assert_eq!(rec.outcome.turns, 50);
    assert_eq!(handles[0].call_count(), 50);
    assert_eq!(rec.outcome.fallback, Some(FallbackKind::ModelCall));
    assert!(rec.events.contains(&Event::LimitsReached { reason: LimitReason::MaxIterations }));
    let last_call = provider.calls().pop().unwrap();
    assert_eq!(last_call.purpose, CallPurpose::Fallback);
    assert_eq!(last_call.tool_choice, ToolChoice::None);
}

#[test]
fn f2_delegation_deeper_than_3_is_refused() {
    assert!(Run::builder(LoopConfig::default()).user("x").depth(3).build().is_ok());
    let err = Run::builder(LoopConfig::default()).user("x").depth(4).build().unwrap_err();
    assert_eq!(err, EngineError::DelegationTooDeep { depth: 4, max: 3 });
}

#[tokio::test]
async fn f3_empty_reply_ends_the_loop_with_a_fallback() {
    let (tools, _) = tools_with(&["t"]);
    let provider = ScriptedProvider::new("m").call_tool("t", "{}").empty().reply_text("unused");
    let (rec, provider) = run_script(LoopConfig::default(), provider, tools).await;
    assert_eq!(rec.outcome.stop, StopCause::EmptyReply);
    assert_eq!(rec.outcome.state, RunState::Completed);
    assert_eq!(rec.outcome.fallback, Some(FallbackKind::ModelCall));
    assert!(!rec.outcome.final_text.is_empty());
    assert_eq!(provider.remaining(), 1);
}

#[tokio::test]
async fn f4_each_budget_stops_at_a_turn_boundary_with_its_reason() {
    type Case = (fn(&mut LoopConfig), LimitReason, RunState);
    let cases: [Case; 4] = [
        (|c| c.budget.max_turns = Some(3), LimitReason::MaxTurns, RunState::MaxSteps),
        (|c| c.budget.token_budget = Some(300), LimitReason::TokenBudget, RunState::BudgetExceeded),
        (|c| c.budget.tool_call_budget = Some(2), LimitReason::ToolCallBudget, RunState::BudgetExceeded),
        (
            |c| {
                c.budget.cost_limit = Some(0.001);
                c.prices = c.prices.clone().with(
                    "m",
                    looprail_loop_core::price::ModelPrice {
                        input_per_mtok: 4.0,
                        output_per_mtok: 10.0,
                        ..Default::default()
                    },
                );
            },
            LimitReason::CostLimit,
            RunState::BudgetExceeded,
        ),
    ];
    for (configure, reason, state) in cases {
        let mut config = LoopConfig::default();
        configure(&mut config);
        let (tools, _) = tools_with(&["t"]);
        let mut provider = ScriptedProvider::new("m");
        for i in 0..10 {
            provider = provider.call_tool("t", &format!("{{\"i\": {i}}}"));
        }
        let (rec, _) = run_script(config.clone(), provider, tools).await;
        assert_eq!(rec.outcome.stop, StopCause::Limit { reason }, "{reason:?}");
        assert_eq!(rec.outcome.state, state);
        assert!(rec.events.contains(&Event::LimitsReached { reason }));
        assert_eq!(rec.outcome.fallback, Some(FallbackKind::ModelCall));
        // The turn in flight finished; no turn started after the budget was used up.
        let turns = rec.outcome.turns;
        match reason {
            LimitReason::MaxTurns => assert_eq!(turns, 3),
            LimitReason::TokenBudget => assert_eq!(turns, 3), // 120 tokens a turn: 240 < 300 <= 360
            LimitReason::ToolCallBudget => assert_eq!(rec.outcome.tool_calls, 2),
            LimitReason::CostLimit => assert_eq!(turns, 2), // 0.0006 a turn: 0.0012 >= 0.001 after two
            _ => unreachable!(),
        }
    }
}

/// Six tool turns of 200 + 50 tokens under `config`: the recording, the index of the one
/// `agent.budget.near` event, and the turns started before it.
async fn near_budget_run(config: LoopConfig) -> (Recorded, usize, usize) {
    let (tools, _) = tools_with(&["t"]);
    let mut provider = ScriptedProvider::new("m").usage_per_call(200, 50);
    for i in 0..6 {
        provider = provider.call_tool("t", &format!("{{\"i\": {i}}}"));
    }
    let (rec, _) = run_script(config, provider, tools).await;
    assert_eq!(rec.count("agent.budget.near"), 1);
    let near = rec.events.iter().position(|e| e.name() == "agent.budget.near").unwrap();
    let turns_before = rec.events[..near].iter().filter(|e| e.name() == "agent.turn.started").count();
    (rec, near, turns_before)
}

#[tokio::test]
async fn f5_near_budget_fires_once_inside_the_reserve() {
    let mut config = LoopConfig::default();
    config.budget.token_budget = Some(1000);
    config.guardrails.reserve_tokens = 512;
    let (rec, _, turns_before) = near_budget_run(config).await;
    // 250 tokens per turn: after two turns 500 are left, inside the 512 reserve.
    assert_eq!(turns_before, 2);
    assert!(rec.events.contains(&Event::NearBudget { remaining_tokens: Some(500), remaining_cost: None }));
}

#[tokio::test]
async fn f5_near_budget_keeps_a_tenth_of_the_cost_limit_in_reserve() {
    let mut config = LoopConfig::default();
    config.budget.cost_limit = Some(1.0);
    assert_eq!(config.guardrails.reserve_cost_fraction, 0.1, "the catalogue's default (F5)");
    // 200 input tokens at 1,150 per million: 0.23 a turn.
    let price = looprail_loop_core::price::ModelPrice {
        input_per_mtok: 1_150.0,
        output_per_mtok: 0.0,
        cache_read_per_mtok: None,
        cache_write_per_mtok: None,
    };
    config.prices = config.prices.with("m", price);
    let (rec, near, turns_before) = near_budget_run(config).await;
    // After 3 turns 0.31 is left (outside the 0.1 reserve); after 4, 0.08 (inside).
    assert_eq!(turns_before, 4);
    let Event::NearBudget { remaining_cost: Some(left), .. } = rec.events[near] else { panic!() };
    assert!((left - 0.08).abs() < 1e-9, "{left}");
}

#[tokio::test(start_paused = true)]
async fn f6_soft_time_limit_gets_one_summary_turn_then_times_out() {
    let mut config = LoopConfig::default();
    config.budget.soft_time_limit_secs = 60;
    config.budget.hard_time_limit_secs = 120;
    let tools = ToolSet::new().with(SlowTool::new("slow", Duration::from_secs(25)));
    let mut provider = ScriptedProvider::new("m");
    for i in 0..10 {
        provider = provider.call_tool("slow", &format!("{{\"i\": {i}}}"));
    }
    let (rec, provider) = run_script(config, provider, tools).await;
    assert_eq!(rec.outcome.stop, StopCause::Limit { reason: LimitReason::SoftTimeLimit });
    assert_eq!(rec.outcome.state, RunState::TimedOut);
    assert_eq!(
        rec.outcome.turns, 3,
        "turns start at 0 s, 25 s and 50 s; the 75 s boundary is past the soft limit"
    );
    assert_eq!(rec.count("agent.exhaustion.soft_limit"), 1);
    let last = provider.calls().pop().unwrap();
    assert_eq!(last.purpose, CallPurpose::SoftLimitSummary);
    assert!(last.instruction.unwrap().contains("Summarise"));
}

#[tokio::test(start_paused = true)]
async fn f6_hard_time_limit_ends_without_another_model_call() {
    let mut config = LoopConfig::default();
    config.budget.soft_time_limit_secs = 0;
    config.budget.hard_time_limit_secs = 60;
    let tools = ToolSet::new().with(SlowTool::new("slow", Duration::from_secs(45)));
    let provider =
        ScriptedProvider::new("m").call_tool("slow", "{}").call_tool("slow", "{\"b\":1}").reply_text("late");
    let (rec, provider) = run_script(config, provider, tools).await;
    assert_eq!(rec.outcome.state, RunState::TimedOut);
    assert_eq!(rec.outcome.stop, StopCause::Limit { reason: LimitReason::Timeout });
    assert_eq!(rec.outcome.fallback, Some(FallbackKind::Deterministic));
    assert!(rec.outcome.final_text.contains("time limit"));
    assert!(rec.outcome.final_text.contains("slow: done"));
    assert!(provider.calls().iter().all(|c| c.purpose == CallPurpose::Turn));
    assert_eq!(provider.calls().len(), 2);
}

#[tokio::test]
async fn f10_a_failing_fallback_call_yields_a_deterministic_reply() {
    let mut config = LoopConfig::default();
    config.budget.max_turns = Some(1);
    let (tools, _) = tools_with(&["t"]);
    let provider = ScriptedProvider::new("m")
        .call_tool("t", "{}")
        .on_fallback(ScriptStep::Fail(ProviderError::new(ProviderErrorKind::Server, "down")));
    let (rec, _) = run_script(config, provider, tools).await;
    assert_eq!(rec.outcome.fallback, Some(FallbackKind::Deterministic));
    assert!(rec.outcome.final_text.starts_with("I could not finish this task: the maximum number of turns"));
    assert!(rec.outcome.final_text.contains("t: t result"));
    assert!(rec.events.contains(&Event::FallbackReply { deterministic: true }));
}

#[tokio::test]
async fn f10_fallback_instruction_forbids_tools_and_future_actions() {
    let mut config = LoopConfig::default();
    config.budget.max_turns = Some(1);
    let (tools, _) = tools_with(&["t"]);
    let provider = ScriptedProvider::new("m").call_tool("t", "{}");
    let (_, provider) = run_script(config, provider, tools).await;
    let fallback = provider.calls().pop().unwrap();
    let instruction = fallback.instruction.unwrap();
    assert_eq!(fallback.tool_choice, ToolChoice::None);
    assert!(instruction.contains("incomplete"));
    assert!(instruction.contains("still missing"));
    assert!(instruction.contains("no next turn"));
}

struct Scripted(std::sync::Mutex<Vec<IterationDecision>>);

#[async_trait::async_trait]
impl MaxIterationsHandler for Scripted {
    async fn on_max_iterations(&self, count: u32, messages: &[Message]) -> IterationDecision {
        assert_eq!(count, 2);
        assert!(!messages.is_empty());
        self.0.lock().unwrap().remove(0)
    }
}

#[tokio::test]
async fn f11_handler_can_continue_inject_an_instruction_or_stop() {
    let (tools, handles) = tools_with(&["t"]);
    let mut provider = ScriptedProvider::new("m");
    for i in 0..10 {
        provider = provider.call_tool("t", &format!("{{\"i\": {i}}}"));
    }
    let handler = Scripted(std::sync::Mutex::new(vec![
        IterationDecision::Continue,
        IterationDecision::NewInstruction("Wrap up now.".into()),
        IterationDecision::Stop,
    ]));
    let provider = Arc::new(provider);
    let mut run = Run::builder(LoopConfig::default())
        .user("go")
        .tools(tools.definitions())
        .max_iterations(2)
        .build()
        .unwrap();
    let driver = Driver::new(provider, tools).with_iteration_handler(Arc::new(handler));
    let rec = drive(&mut run, driver).await;
    assert_eq!(handles[0].call_count(), 6, "2 turns, 2 more after continue, 2 more after the instruction");
    assert_eq!(rec.outcome.stop, StopCause::Limit { reason: LimitReason::MaxIterations });
    let injected = run
        .messages()
        .iter()
        .find(|m| m.internal.as_ref().is_some_and(|t| t.reason == "max_iterations_instruction"));
    assert_eq!(injected.and_then(Message::joined_text).as_deref(), Some("Wrap up now."));
    assert!(run.visible_messages().all(|m| m.joined_text().as_deref() != Some("Wrap up now.")));
}

#[tokio::test]
async fn f12_truncated_replies_are_continued_twice_then_accepted() {
    let provider = ScriptedProvider::new("m")
        .truncated("part one, ")
        .truncated("part two, ")
        .truncated("part three")
        .reply_text("unused");
    let (rec, provider) = run_script(LoopConfig::default(), provider, ToolSet::new()).await;
    assert_eq!(rec.outcome.final_text, "part one, part two, part three");
    assert_eq!(rec.outcome.stop, StopCause::Finished);
    assert_eq!(rec.count("agent.max_tokens.continuation"), 2);
    assert_eq!(provider.remaining(), 1);
}

#[tokio::test]
async fn f12_continuation_messages_are_internal() {
    let provider = Arc::new(ScriptedProvider::new("m").truncated("a").reply_text("b"));
    let mut run = Run::builder(LoopConfig::default()).user("go").build().unwrap();
    let rec = drive(&mut run, Driver::new(provider, ToolSet::new())).await;
    assert_eq!(rec.outcome.final_text, "ab");
    let internal: Vec<_> = run.messages().iter().filter(|m| m.is_internal()).collect();
    assert_eq!(internal.len(), 1);
    assert_eq!(internal[0].internal.as_ref().unwrap().reason, "max_tokens_recovery");
    assert_eq!(run.visible_messages().filter(|m| m.role == Role::User).count(), 1);
}

#[tokio::test]
async fn f14_todo_nudges_at_most_three_times_then_accepts() {
    let todo = RecordingTool::new("todo_write").output("saved");
    let tools = ToolSet::new().with(todo);
    let list = r#"{"todos": [{"content": "write tests", "status": "pending"}, {"content": "ship", "status": "completed"}]}"#;
    let provider = ScriptedProvider::new("m")
        .call_tool("todo_write", list)
        .reply_text("done 1")
        .reply_text("done 2")
        .reply_text("done 3")
        .reply_text("done 4")
        .reply_text("unused");
    let provider = Arc::new(provider);
    let mut run = Run::builder(LoopConfig::default()).user("go").tools(tools.definitions()).build().unwrap();
    let rec = drive(&mut run, Driver::new(provider.clone(), tools)).await;
    assert_eq!(rec.outcome.final_text, "done 4");
    assert_eq!(rec.count("agent.guardrail.intervened"), 3);
    let nudge = run
        .messages()
        .iter()
        .find(|m| m.internal.as_ref().is_some_and(|t| t.reason == "todo_nudge"))
        .unwrap();
    assert!(nudge.joined_text().unwrap().contains("write tests"));
    assert!(!nudge.joined_text().unwrap().contains("ship"));
    assert_eq!(provider.remaining(), 1);
}

#[tokio::test]
async fn f14_a_finished_todo_list_is_not_nudged() {
    let tools = ToolSet::new().with(RecordingTool::new("todo_write"));
    let list = r#"{"todos": [{"content": "ship", "status": "completed"}]}"#;
    let provider = ScriptedProvider::new("m").call_tool("todo_write", list).reply_text("all done");
    let (rec, _) = run_script(LoopConfig::default(), provider, tools).await;
    assert_eq!(rec.outcome.final_text, "all done");
    assert_eq!(rec.count("agent.guardrail.intervened"), 0);
}

#[tokio::test]
async fn bad_tool_calls_become_error_results_the_model_sees() {
    let (tools, handles) = tools_with(&["read"]);
    let provider = ScriptedProvider::new("m")
        .call_tools(&[
            ("delete_everything", "{}"),
            ("read", "{\"path\": "),
            ("read", "[1, 2]"),
            ("read", "{\"path\": \"a\"}"),
        ])
        .reply_text("recovered");
    let provider = Arc::new(provider);
    let mut run = Run::builder(LoopConfig::default()).user("go").tools(tools.definitions()).build().unwrap();
    let rec = drive(&mut run, Driver::new(provider, tools)).await;
    assert_eq!(rec.outcome.final_text, "recovered");
    assert_eq!(handles[0].call_count(), 1, "only the valid call ran");
    let flags: Vec<_> =
        run.messages().iter().flat_map(Message::tool_results).map(|r| r.flag.clone()).collect();
    assert_eq!(
        flags,
        [
            Some("unknown-tool".to_owned()),
            Some("invalid-arguments".to_owned()),
            Some("invalid-arguments".to_owned()),
            None
        ]
    );
    assert_eq!(rec.count("agent.tool.rejected"), 3);
}

#[tokio::test]
async fn unknown_stop_reasons_and_missing_usage_are_mapped_not_fatal() {
    let mut odd = ModelResponse::text("m", "odd but fine");
    odd.stop_reason = StopReason::Other("pause_turn_v9".into());
    odd.usage = None;
    let provider = ScriptedProvider::new("m").usage_per_call(0, 0).then(ScriptStep::Reply(odd));
    let (rec, _) = run_script(LoopConfig::default(), provider, ToolSet::new()).await;
    assert_eq!(rec.outcome.final_text, "odd but fine");
    assert_eq!(rec.outcome.state, RunState::Completed);
}

#[tokio::test]
async fn a_provider_failure_ends_in_error_with_the_cause_and_a_reply() {
    let provider = ScriptedProvider::new("m").fail(ProviderErrorKind::Auth, "invalid x-api-key");
    let (rec, provider) = run_script(LoopConfig::default(), provider, ToolSet::new()).await;
    assert_eq!(rec.outcome.state, RunState::Error);
    let StopCause::ProviderFailed { message } = &rec.outcome.stop else { panic!("{:?}", rec.outcome.stop) };
    assert!(message.contains("invalid x-api-key"));
    assert_eq!(rec.outcome.fallback, Some(FallbackKind::Deterministic));
    assert_eq!(provider.calls().len(), 1, "no fallback call to a failing provider");
    assert_eq!(rec.names().last(), Some(&"agent_run.failed"));
}

#[tokio::test]
async fn oversized_tool_output_is_cut_with_a_note() {
    let big = "x".repeat(10_000);
    let tools = ToolSet::new().with(RecordingTool::new("dump").output(big));
    let mut config = LoopConfig::default();
    config.limits.max_tool_output_bytes = 1_000;
    let provider = Arc::new(ScriptedProvider::new("m").call_tool("dump", "{}").reply_text("ok"));
    let mut run = Run::builder(config).user("go").tools(tools.definitions()).build().unwrap();
    drive(&mut run, Driver::new(provider, tools)).await;
    let result = run.messages().iter().flat_map(Message::tool_results).next().unwrap();
    assert!(result.content.len() < 1_200);
    assert!(result.content.contains("showing 1000 of 10000 bytes"));
}

#[tokio::test]
async fn tool_failures_are_results_not_run_failures() {
    let flaky = RecordingTool::new("send").fail_times(1, ToolErrorKind::Server);
    let tools = ToolSet::new().with(flaky.clone());
    let provider = ScriptedProvider::new("m").call_tool("send", "{}").reply_text("reported");
    let (rec, _) = run_script(LoopConfig::default(), provider, tools).await;
    assert_eq!(rec.outcome.final_text, "reported");
    assert_eq!(flaky.call_count(), 1, "the driver's default executor never retries");
}

#[tokio::test]
async fn ask_human_pauses_the_run_and_a_reply_resumes_it() {
    let provider = Arc::new(
        ScriptedProvider::new("m")
            .call_tool("ask_human", r#"{"question": "Which branch?"}"#)
            .reply_text("Using main."),
    );
    let mut run = Run::builder(LoopConfig::default()).user("deploy").build().unwrap();
    let driver = Driver::new(provider.clone(), ToolSet::new());
    let first = driver.drive(&mut run).await.unwrap();
    assert_eq!(first.state, RunState::WaitingOnHuman);
    assert_eq!(first.final_text, "Which branch?");
    assert!(run.provide_human_reply("main").is_ok());
    let second = driver.drive(&mut run).await.unwrap();
    assert_eq!(second.state, RunState::Completed);
    assert_eq!(second.final_text, "Using main.");
    let answer = run.messages().iter().flat_map(Message::tool_results).last().unwrap();
    assert_eq!(answer.content, "main");
}

#[tokio::test]
async fn a_forced_tool_without_tool_choice_support_becomes_an_instruction() {
    struct ForceAsk;
    impl Guard for ForceAsk {
        fn name(&self) -> &str {
            "force_ask"
        }
        fn after_tools(&mut self, _v: &TurnView<'_>, _c: &[ToolCall], _r: &[ToolResult]) -> Vec<Decision> {
            vec![Decision::ForceToolChoice(ToolChoice::Named("ask_human".into()))]
        }
    }
    let (tools, _) = tools_with(&["t"]);
    let provider =
        Arc::new(ScriptedProvider::new("m").without_tool_choice().call_tool("t", "{}").reply_text("fine"));
    let mut run = Run::builder(LoopConfig::default())
        .user("go")
        .tools(tools.definitions())
        .guard(ForceAsk)
        .build()
        .unwrap();
    drive(&mut run, Driver::new(provider.clone(), tools)).await;
    let second = &provider.calls()[1];
    assert_eq!(second.tool_choice, ToolChoice::Named("ask_human".into()));
    assert!(second.instruction.as_deref().unwrap().contains("You must call the `ask_human` tool now."));
}

#[tokio::test]
async fn a_conversation_takes_its_next_user_turn_after_completion() {
    let provider = Arc::new(ScriptedProvider::new("m").reply_text("first").reply_text("second"));
    let mut run = Run::builder(LoopConfig::default()).user("one").build().unwrap();
    let driver = Driver::new(provider, ToolSet::new());
    assert_eq!(driver.drive(&mut run).await.unwrap().final_text, "first");
    run.begin_user_turn("two").unwrap();
    let outcome = driver.drive(&mut run).await.unwrap();
    assert_eq!(outcome.final_text, "second");
    assert_eq!(run.counters().user_turns, 2);
    assert_eq!(run.messages().len(), 4);
}

#[tokio::test]
async fn streaming_publishes_text_deltas_and_gives_the_same_outcome() {
    let provider = Arc::new(ScriptedProvider::new("m").reply_text("streamed answer"));
    let mut run = Run::builder(LoopConfig::default()).user("go").build().unwrap();
    let rec = drive(&mut run, Driver::new(provider, ToolSet::new()).streaming(true)).await;
    assert_eq!(rec.outcome.final_text, "streamed answer");
    assert!(rec.events.contains(&Event::TextDelta { text: "streamed answer".into() }));
}
