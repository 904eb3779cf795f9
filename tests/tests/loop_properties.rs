//! Property tests of the engine's invariants over random scripted runs (issue 2, B7): caps and
//! budgets are never exceeded by more than the turn in flight, every abnormal stop yields a
//! reply, the event stream ends with exactly one terminal event, and cancellation is observed
//! within one boundary.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::engine::IterationDecision;
use looprail_loop_core::prelude::*;
use looprail_loop_core::provider::CallPurpose;
use looprail_loop_core::testkit::strategies::{ModelTurn, RunLimits, model_turn, run_limits};
use looprail_loop_core::testkit::{RecordingTool, ScriptedProvider};
use looprail_tests::drive;
use proptest::prelude::*;

const TOOLS: [&str; 3] = ["read", "search", "write"];

fn step() -> impl Strategy<Value = ModelTurn> {
    model_turn(TOOLS.len() as u8)
}

fn limits() -> impl Strategy<Value = RunLimits> {
    run_limits()
}

fn config_for(l: &RunLimits) -> LoopConfig {
    let mut c = LoopConfig::default();
    l.apply(&mut c);
    c
}

struct Simulated {
    outcome: Outcome,
    turn_calls_after_cancel: usize,
    tool_batches_after_cancel: usize,
}

/// Drives the engine by hand. `cancel_at` sets the cancel flag from that step on.
fn simulate(
    script: &[ModelTurn],
    l: &RunLimits,
    cancel_at: Option<usize>,
    fallback_fails: bool,
) -> Simulated {
    let defs =
        TOOLS.iter().map(|t| ToolDefinition::new(*t, "", serde_json::json!({"type": "object"}))).collect();
    let mut run =
        Run::builder(config_for(l)).user("go").tools(defs).max_iterations(l.max_iterations).build().unwrap();
    let mut input = Input::Start;
    let mut next = 0usize;
    let mut after_cancel = (0usize, 0usize);
    for steps in 0.. {
        assert!(steps < 10_000, "the engine did not terminate");
        let cancelled = cancel_at.is_some_and(|k| steps >= k);
        let tick = Tick { elapsed: Duration::from_secs(steps as u64), cancel_requested: cancelled };
        let action = run.step(input, tick).unwrap();
        while run.poll_effect().is_some() {}
        let c = run.counters().clone();
        input = match action {
            Action::CallModel(spec) if spec.purpose == CallPurpose::Turn => {
                // A turn starts only while every budget still has room (this turn is counted).
                if let Some(max) = l.max_turns {
                    assert!(c.turns <= max, "turn {} started with max_turns {max}", c.turns);
                }
                if let Some(b) = l.token_budget {
                    assert!(c.usage.total() < b, "turn started at {} tokens of {b}", c.usage.total());
                }
                if let Some(b) = l.tool_call_budget {
                    assert!(c.tool_calls < b, "turn started at {} tool calls of {b}", c.tool_calls);
                }
                assert!(c.iterations <= l.max_iterations);
                if cancelled {
                    after_cancel.0 += 1;
                }
                let step = script.get(next).cloned().unwrap_or(ModelTurn::Text);
                next += 1;
                match step.response(next, &TOOLS) {
                    Ok(r) => Input::ModelReply(r),
                    Err(e) => Input::ModelFailed(e),
                }
            }
            Action::CallModel(_) => {
                if fallback_fails {
                    Input::ModelFailed(ProviderError::new(ProviderErrorKind::Timeout, "fallback timed out"))
                } else {
                    Input::ModelReply(ModelResponse::text("sim", "partial result").with_usage(10, 10))
                }
            }
            Action::RunTools(calls) => {
                if cancelled {
                    after_cancel.1 += 1;
                }
                Input::ToolsDone(calls.iter().map(|c| ToolResult::ok(&c.id, "r")).collect())
            }
            Action::MaxIterationsReached { .. } => Input::IterationDecision(IterationDecision::Stop),
            Action::Summarize(_) => Input::SummaryDone(Err("no summaries in this simulation".into())),
            Action::Finish(outcome) => {
                return Simulated {
                    outcome,
                    turn_calls_after_cancel: after_cancel.0,
                    tool_batches_after_cancel: after_cancel.1,
                };
            }
        };
    }
    unreachable!()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn caps_hold_and_abnormal_stops_always_reply(
        script in prop::collection::vec(step(), 0..40),
        l in limits(),
        fallback_fails in any::<bool>(),
    ) {
        let sim = simulate(&script, &l, None, fallback_fails);
        let o = &sim.outcome;
        if let Some(max) = l.max_turns { prop_assert!(o.turns <= max); }
        prop_assert!(o.state.is_terminal());
        match &o.stop {
            StopCause::Finished => prop_assert_eq!(o.fallback, None),
            StopCause::Cancelled => unreachable!(),
            _ => {
                prop_assert!(!o.final_text.trim().is_empty(), "abnormal stop {:?} without a reply", o.stop);
                prop_assert!(o.fallback.is_some());
            }
        }
    }

    #[test]
    fn cancellation_is_observed_within_one_boundary(
        script in prop::collection::vec(step(), 1..30),
        l in limits(),
        cancel_at in 0usize..20,
    ) {
        let sim = simulate(&script, &l, Some(cancel_at), false);
        // After the flag is up, no new loop turn starts, and at most the batch of the
        // response in flight runs.
        prop_assert_eq!(sim.turn_calls_after_cancel, 0);
        prop_assert!(sim.tool_batches_after_cancel <= 1);
        if sim.outcome.state == RunState::Cancelled {
            prop_assert_eq!(&sim.outcome.final_text, "");
        }
    }
}

fn terminal_events(events: &[Event]) -> Vec<&'static str> {
    events
        .iter()
        .map(Event::name)
        .filter(|n| matches!(*n, "agent_run.completed" | "agent_run.cancelled" | "agent_run.failed"))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn the_event_stream_ends_with_exactly_one_terminal_event(seed in any::<u64>(), max_turns in prop::option::of(1u32..10)) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let tools = ToolSet::new().with(RecordingTool::new("read").idempotent(true)).with(RecordingTool::new("write"));
        let provider = Arc::new(ScriptedProvider::seeded("sim", seed, 30, &["read", "write"]));
        let mut config = LoopConfig::default();
        config.budget.max_turns = max_turns;
        let mut run = Run::builder(config).user("go").tools(tools.definitions()).build().unwrap();
        let rec = runtime.block_on(drive(&mut run, Driver::new(provider, tools)));
        let terminal = terminal_events(&rec.events);
        prop_assert_eq!(terminal.len(), 1);
        prop_assert_eq!(rec.events.last().map(Event::name), Some(terminal[0]));
        prop_assert_eq!(rec.names().first().copied(), Some("agent_run.started"));
    }
}
