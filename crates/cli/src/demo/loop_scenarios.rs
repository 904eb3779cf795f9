//! The loop engine's scenarios: an answer, a budget stop, a truncated reply continued, an
//! empty reply, the iteration ceiling, bad calls, cancellation and a human pause.

use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::prelude::*;
use looprail_loop_core::testkit::ScriptedProvider;

use tokio_util::sync::CancellationToken;

use super::harness::{Check, drive, search_tool};
use crate::progress::stderr_sink;

pub(super) fn normal(quiet: bool) -> Result<Check, String> {
    let provider = ScriptedProvider::new("scripted")
        .call_tool("search_flights", r#"{"to": "LIS"}"#)
        .reply_text("The cheapest is Ryanair 55 at 64 EUR.");
    let tools = ToolSet::new().with(search_tool());
    let (outcome, _) = drive("normal", quiet, LoopConfig::default(), provider, tools, |d| d)?;
    let ok = outcome.state == RunState::Completed && outcome.fallback.is_none() && outcome.tool_calls == 1;
    Ok(Check { note: format!("{} turns, {} tool call", outcome.turns, outcome.tool_calls), outcome, ok })
}

pub(super) fn budget_stop(quiet: bool) -> Result<Check, String> {
    let mut config = LoopConfig::default();
    config.budget.tool_call_budget = Some(3);
    let mut provider = ScriptedProvider::new("scripted");
    for day in 1..=10 {
        provider = provider.call_tool("search_flights", &format!(r#"{{"to": "LIS", "day": {day}}}"#));
    }
    let tools = ToolSet::new().with(search_tool());
    let (outcome, _) = drive("budget", quiet, config, provider, tools, |d| d)?;
    let ok = outcome.stop == StopCause::Limit { reason: LimitReason::ToolCallBudget }
        && outcome.tool_calls == 3
        && outcome.fallback == Some(FallbackKind::ModelCall)
        && !outcome.final_text.is_empty();
    Ok(Check { note: "stopped at 3 tool calls, fallback reply".into(), outcome, ok })
}

pub(super) fn continuation(quiet: bool) -> Result<Check, String> {
    let provider = ScriptedProvider::new("scripted")
        .truncated("Ryanair 55 leaves at 06:10 and costs ")
        .reply_text("64 EUR.");
    let (outcome, run) = drive("max-tokens", quiet, LoopConfig::default(), provider, ToolSet::new(), |d| d)?;
    let internal = run.messages().iter().filter(|m| m.is_internal()).count();
    let ok = outcome.final_text == "Ryanair 55 leaves at 06:10 and costs 64 EUR." && internal == 1;
    Ok(Check { note: "1 continuation, stitched reply".into(), outcome, ok })
}

pub(super) fn empty_reply(quiet: bool) -> Result<Check, String> {
    let provider = ScriptedProvider::new("scripted").call_tool("search_flights", "{}").empty();
    let tools = ToolSet::new().with(search_tool());
    let (outcome, _) = drive("empty-reply", quiet, LoopConfig::default(), provider, tools, |d| d)?;
    let ok = outcome.stop == StopCause::EmptyReply && !outcome.final_text.is_empty();
    Ok(Check { note: "empty reply -> fallback".into(), outcome, ok })
}

pub(super) fn iteration_ceiling(quiet: bool) -> Result<Check, String> {
    let mut provider = ScriptedProvider::new("scripted");
    for page in 0..80 {
        provider = provider.call_tool("search_flights", &format!(r#"{{"page": {page}}}"#));
    }
    let tools = ToolSet::new().with(search_tool());
    let (outcome, _) = drive("ceiling", true, LoopConfig::default(), provider, tools, |d| d)?;
    let _ = quiet;
    let ok = outcome.state == RunState::MaxSteps && outcome.turns == 50 && !outcome.final_text.is_empty();
    Ok(Check { note: "50-turn ceiling -> fallback".into(), outcome, ok })
}

pub(super) fn bad_tool_call(quiet: bool) -> Result<Check, String> {
    let provider = ScriptedProvider::new("scripted")
        .call_tools(&[("book_flight", "{}"), ("search_flights", "{\"to\": ")])
        .call_tool("search_flights", r#"{"to": "LIS"}"#)
        .reply_text("Ryanair 55, 64 EUR.");
    let tools = ToolSet::new().with(search_tool());
    let (outcome, _) = drive("bad-call", quiet, LoopConfig::default(), provider, tools, |d| d)?;
    let ok = outcome.state == RunState::Completed && outcome.tool_calls == 3;
    Ok(Check { note: "unknown tool + bad JSON answered, run went on".into(), outcome, ok })
}

pub(super) fn cancellation(quiet: bool) -> Result<Check, String> {
    let token = CancellationToken::new();
    let trigger = token.clone();
    let mut provider = ScriptedProvider::new("scripted");
    for page in 0..10 {
        provider = provider.call_tool("search_flights", &format!(r#"{{"page": {page}}}"#));
    }
    let tools = ToolSet::new().with(search_tool());
    let sink = stderr_sink("cancel", quiet);
    let (outcome, _) = drive("cancel", true, LoopConfig::default(), provider, tools, move |d| {
        // A user presses stop while turn 2's tool runs: the next boundary observes it.
        let events = EventSink::new(move |event| {
            sink.emit(event);
            if matches!(event, Event::TurnStarted { turn: 2, .. }) {
                trigger.cancel();
            }
        });
        d.with_cancel(token).with_events(events)
    })?;
    let ok = outcome.state == RunState::Cancelled && outcome.final_text.is_empty() && outcome.turns == 2;
    Ok(Check { note: "cancelled at the boundary after turn 2".into(), outcome, ok })
}

pub(super) fn human_pause(quiet: bool) -> Result<Check, String> {
    let provider = ScriptedProvider::new("scripted")
        .call_tool("ask_human", r#"{"question": "Do you prefer morning or evening flights?"}"#);
    let (outcome, _) = drive("ask-human", quiet, LoopConfig::default(), provider, ToolSet::new(), |d| d)?;
    let ok = outcome.state == RunState::WaitingOnHuman && outcome.final_text.contains("morning or evening");
    Ok(Check { note: "paused for the human's answer".into(), outcome, ok })
}
