//! FEATURES.md's compaction numbers, asserted (issue 14): R1 keeps the last 10 messages
//! verbatim, R2 the last 4 under a "Deep pruned" marker, and R2 fires only within 20
//! iterations of R1 (exactly at the edge, not one past it).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail_compaction::{AutoCompaction, AutoCompactionConfig};
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::context::{ContextPolicy, ContextStep, ContextView};
use looprail_loop_core::guard::Counters;
use looprail_loop_core::message::Message;

fn long(i: usize) -> String {
    format!("message {i}: {}", "lorem ipsum dolor sit amet ".repeat(20))
}

/// `n` alternating assistant/user messages after a first user message.
fn grow(messages: &mut Vec<Message>, n: usize) {
    let start = messages.len();
    for i in start..start + n {
        messages.push(if i % 2 == 1 { Message::assistant(long(i)) } else { Message::user(long(i)) });
    }
}

/// Runs the policy at iteration `turns` with a failing summary (deterministic truncation).
fn check(policy: &mut AutoCompaction, messages: &mut Vec<Message>, turns: u32) -> bool {
    let counters = Counters { turns, ..Counters::default() };
    let config = LoopConfig::default();
    let view = ContextView::new(&counters, &config);
    match policy.prepare(messages, &view) {
        ContextStep::Summarize { .. } => {
            policy.apply_summary(messages, Err("offline".into()), &view);
            true
        }
        ContextStep::Ready(decisions) => !decisions.is_empty(),
    }
}

fn has_text(messages: &[Message], needle: &str) -> bool {
    messages.iter().any(|m| m.joined_text().is_some_and(|t| t.contains(needle)))
}

#[test]
fn r1_keeps_10_r2_keeps_4_deep_pruned_within_20_iterations() {
    let config = AutoCompactionConfig { context_window: 4_000, ..AutoCompactionConfig::default() };
    assert_eq!((config.keep_verbatim, config.deep_keep_verbatim, config.ladder_window), (10, 4, 20));
    let mut policy = AutoCompaction::new(config.clone());
    let mut messages = vec![Message::user("the task")];
    grow(&mut messages, 30);
    let original = messages.clone();
    assert!(check(&mut policy, &mut messages, 1), "over 70%: R1");
    assert_eq!(messages[messages.len() - 10..], original[original.len() - 10..], "the last 10, verbatim");
    assert!(has_text(&messages, "Summary"), "the summary note replaces the rest");

    // Over again exactly 20 iterations after R1: R2, the last 4 kept.
    grow(&mut messages, 30);
    let before = messages.clone();
    assert!(check(&mut policy, &mut messages, 21));
    assert_eq!(messages[messages.len() - 4..], before[before.len() - 4..], "the last 4, verbatim");
    assert_ne!(messages[messages.len() - 5], before[before.len() - 5], "the 5th from the end is gone");
    assert!(has_text(&messages, "Deep pruned"), "marked");

    // One iteration past the window, a fresh crossing is R1 again (the last 10 kept).
    let mut fresh = AutoCompaction::new(config);
    let mut messages = vec![Message::user("the task")];
    grow(&mut messages, 30);
    assert!(check(&mut fresh, &mut messages, 1));
    grow(&mut messages, 30);
    let before = messages.clone();
    assert!(check(&mut fresh, &mut messages, 22));
    assert_eq!(messages[messages.len() - 10..], before[before.len() - 10..]);
    assert!(!has_text(&messages, "Deep pruned"));
}
