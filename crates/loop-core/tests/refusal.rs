//! A reply the provider refused (`stop_reason` refusal: Anthropic's safety classifiers cut a
//! stream short, OpenAI's refusal) is not acted on: calls it started are not run, its text is
//! the answer, and a refused reply with nothing left ends with the fallback reply.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use looprail_loop_core::prelude::*;
use looprail_loop_core::provider::{ModelResponse, StopReason};
use looprail_loop_core::testkit::{RecordingTool, ScriptStep, ScriptedProvider};

fn refused(text: Option<&str>) -> ModelResponse {
    let call = ToolCall::new("toolu_1", "lookup", r#"{"q": "eclip"#);
    let mut response = ModelResponse::tool_calls("scripted", vec![call]);
    response.text = text.map(str::to_owned);
    response.stop_reason = StopReason::Refusal;
    response
}

fn drive(provider: ScriptedProvider) -> (Outcome, RecordingTool) {
    let lookup = RecordingTool::new("lookup").idempotent(true).output("found");
    let tools = ToolSet::new().with(lookup.clone());
    let mut run = Run::builder(LoopConfig::default())
        .user("Summarise this year's eclipses.")
        .tools(tools.definitions())
        .build()
        .unwrap();
    let driver = Driver::new(Arc::new(provider), tools);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    (runtime.block_on(driver.drive(&mut run)).unwrap(), lookup)
}

#[test]
fn the_calls_of_a_refused_reply_are_not_run_and_its_text_is_the_answer() {
    let provider = ScriptedProvider::new("scripted")
        .then(ScriptStep::Reply(refused(Some("Here's a summary of this year's eclipses and how"))))
        .reply_text("never asked for");
    let (outcome, lookup) = drive(provider);
    assert_eq!(lookup.call_count(), 0, "a refused reply's call is not run");
    assert_eq!(outcome.state, RunState::Completed);
    assert_eq!(outcome.final_text, "Here's a summary of this year's eclipses and how");
    assert_eq!(outcome.tool_calls, 0);
}

#[test]
fn a_refused_reply_with_only_calls_ends_with_a_reply_all_the_same() {
    let provider = ScriptedProvider::new("scripted").then(ScriptStep::Reply(refused(None)));
    let (outcome, lookup) = drive(provider);
    assert_eq!(lookup.call_count(), 0);
    assert_eq!(outcome.stop, StopCause::EmptyReply);
    assert!(!outcome.final_text.is_empty(), "F3: every abnormal stop still answers");
}
