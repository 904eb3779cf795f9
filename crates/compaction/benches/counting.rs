//! Token accounting costs (issue 6):
//! - the first count of a 10,000-message history, next to raw tiktoken-rs on the same texts
//!   (target: at least 80% of its throughput);
//! - one new message per turn at 100 and 10,000 messages of history (must not grow);
//! - the compaction decision per turn when nothing needs compacting (target: under 1 µs).

// A benchmark aborts loudly on a broken setup.
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use divan::Bencher;
use divan::counter::BytesCount;
use looprail_compaction::{AutoCompaction, AutoCompactionConfig, TiktokenCounter, TokenLedger};
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::context::{ContextPolicy, ContextView};
use looprail_loop_core::guard::Counters;
use looprail_loop_core::message::{ContentPart, Message, ToolCall, ToolResult};

fn main() {
    divan::main();
}

fn history(len: usize) -> Vec<Message> {
    let mut messages = vec![Message::system("You are a coding agent working in a Rust repository.")];
    let mut i = 0;
    while messages.len() < len {
        let call = ToolCall::new(format!("c{i}"), "read_file", format!(r#"{{"path": "src/module_{i}.rs"}}"#));
        messages.push(Message::assistant_with_calls(Some(format!("Let me look at module {i}.")), vec![call]));
        let body = format!(
            "pub fn handler_{i}(request: &Request) -> Result<Response, Error> {{\n    let user = request.user()?;\n    validate(&user, {i})?;\n    Ok(Response::ok())\n}}\n"
        );
        messages.push(Message::tool_result(ToolResult::ok(format!("c{i}"), body.repeat(4))));
        i += 1;
    }
    messages
}

fn text_bytes(messages: &[Message]) -> usize {
    messages
        .iter()
        .flat_map(|m| &m.content)
        .map(|p| match p {
            ContentPart::Text { text } => text.len(),
            ContentPart::ToolUse(c) => c.name.len() + c.arguments.len(),
            ContentPart::ToolResult(r) => r.content.len(),
            ContentPart::Image { .. } => 0,
        })
        .sum()
}

#[divan::bench(sample_count = 10)]
fn first_count_10k_messages(bencher: Bencher) {
    let messages = history(10_000);
    let counter = TiktokenCounter::default();
    bencher.counter(BytesCount::new(text_bytes(&messages))).bench_local(|| {
        let mut ledger = TokenLedger::default();
        divan::black_box(ledger.sync(&messages, &counter))
    });
}

#[divan::bench(sample_count = 10)]
fn raw_tiktoken_same_texts(bencher: Bencher) {
    let messages = history(10_000);
    let texts: Vec<String> = messages
        .iter()
        .flat_map(|m| &m.content)
        .flat_map(|p| match p {
            ContentPart::Text { text } => vec![text.clone()],
            ContentPart::ToolUse(c) => vec![c.name.clone(), c.arguments.clone()],
            ContentPart::ToolResult(r) => vec![r.content.clone()],
            ContentPart::Image { .. } => vec![],
        })
        .collect();
    let bpe = tiktoken_rs::cl100k_base_singleton();
    bencher
        .counter(BytesCount::new(texts.iter().map(String::len).sum::<usize>()))
        .bench_local(|| divan::black_box(texts.iter().map(|t| bpe.count_ordinary(t)).sum::<usize>()));
}

/// Steady state: one long-lived conversation gains a message each turn and the ledger counts
/// it (600 timed turns add 600 messages to the starting history).
#[divan::bench(args = [100, 10_000], sample_count = 30, sample_size = 20)]
fn one_new_message_per_turn(bencher: Bencher, len: usize) {
    let counter = TiktokenCounter::default();
    let mut messages = history(len);
    let mut ledger = TokenLedger::default();
    ledger.sync(&messages, &counter);
    bencher.bench_local(|| {
        messages.push(Message::assistant("I found the handler; now I will check its tests."));
        divan::black_box(ledger.sync(&messages, &counter))
    });
}

#[divan::bench(sample_count = 50, sample_size = 1000)]
fn decision_when_nothing_to_compact(bencher: Bencher) {
    let mut messages = history(1_000);
    let mut policy =
        AutoCompaction::new(AutoCompactionConfig { context_window: 10_000_000, ..Default::default() });
    let counters = Counters::default();
    let config = LoopConfig::default();
    let view = ContextView::new(&counters, &config);
    policy.prepare(&mut messages, &view);
    bencher.bench_local(|| divan::black_box(policy.prepare(&mut messages, &view)));
}
