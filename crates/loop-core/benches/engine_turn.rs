//! Engine overhead per turn (issue 2): one model reply with a tool call plus its tool result,
//! fed to a `Run` with the default guards, at histories of 100, 1,000 and 10,000 messages.
//! Target: under 10 µs per turn, and the 10,000-message figure within 1.5× of the 100 one.

// A benchmark aborts loudly on a broken setup; that is what expect is for here.
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]
use std::time::Duration;

use divan::Bencher;
use looprail_loop_core::prelude::*;

fn main() {
    divan::main();
}

fn history(len: usize) -> Vec<Message> {
    let mut messages = vec![Message::system("You are a test agent."), Message::user("start")];
    let mut i = 0;
    while messages.len() < len {
        let call = ToolCall::new(format!("h{i}"), "noop", r#"{"path": "src/lib.rs"}"#);
        messages.push(Message::assistant_with_calls(None, vec![call]));
        messages.push(Message::tool_result(ToolResult::ok(format!("h{i}"), "fn main() {}")));
        i += 1;
    }
    messages
}

fn ready_run(history: &[Message]) -> Run {
    let tools = vec![ToolDefinition::new("noop", "does nothing", serde_json::json!({"type": "object"}))];
    let mut run = Run::builder(LoopConfig::default())
        .history(history.to_vec())
        .tools(tools)
        .max_iterations(u32::MAX)
        .build()
        .expect("valid run");
    run.step(Input::Start, Tick::default()).expect("first call");
    while run.poll_effect().is_some() {}
    run
}

fn one_turn(run: &mut Run, n: &mut u64) -> Action {
    *n += 1;
    let call = ToolCall::new(format!("b{n}"), "noop", r#"{"path": "src/main.rs"}"#);
    let reply = ModelResponse::tool_calls("bench", vec![call]).with_usage(10, 5);
    let tick = Tick::at(Duration::from_secs(1));
    let action = run.step(Input::ModelReply(reply), tick).expect("tools");
    let Action::RunTools(calls) = action else { panic!("expected tools, got {action:?}") };
    let results = calls.iter().map(|c| ToolResult::ok(&c.id, "ok")).collect();
    let next = run.step(Input::ToolsDone(results), tick).expect("next call");
    while let Some(effect) = run.poll_effect() {
        divan::black_box(effect);
    }
    next
}

/// Steady state: one long-lived run per size takes turn after turn, as a real run does
/// (1,000 timed turns add 2,000 messages to the starting history).
#[divan::bench(args = [100, 1_000, 10_000], sample_count = 40, sample_size = 25)]
fn turn(bencher: Bencher, len: usize) {
    let mut run = ready_run(&history(len));
    let mut n = 0u64;
    bencher.bench_local(|| divan::black_box(one_turn(&mut run, &mut n)));
}

/// The first turn of a freshly built (or restored) run: cold caches included.
#[divan::bench(args = [100, 1_000, 10_000], sample_count = 40, sample_size = 25)]
fn first_turn_after_build(bencher: Bencher, len: usize) {
    let history = history(len);
    let mut n = 0u64;
    bencher
        .with_inputs(|| ready_run(&history))
        .bench_local_refs(|run| divan::black_box(one_turn(run, &mut n)));
}
