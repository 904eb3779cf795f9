//! Polling tools get their own thresholds: a per-tool limit of the repeat counter lets a status
//! check repeat as often as it needs while other tools keep the default, and a tool listed in
//! `polling_tools` is never counted at all.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail_guardrails::{RepeatCounter, RepeatCounterConfig};
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::guard::{Counters, Decision, TurnView};
use looprail_loop_core::prelude::*;

/// The calls (1-based, per tool) that were not run but answered with the loop hint.
fn hinted(counter: &mut RepeatCounter, calls: &[(&str, &str)]) -> Vec<(String, usize)> {
    let config = LoopConfig::default();
    let counters = Counters::default();
    let view = TurnView { counters: &counters, messages: &[], config: &config, elapsed: Default::default() };
    let mut seen = std::collections::HashMap::new();
    let mut out = Vec::new();
    for (i, (tool, args)) in calls.iter().enumerate() {
        let n = seen.entry(*tool).or_insert(0);
        *n += 1;
        let call = ToolCall::new(format!("c{i}"), *tool, *args);
        let replaced =
            counter.before_tools(&view, &[call]).iter().any(|d| matches!(d, Decision::ReplaceResult(_)));
        if replaced {
            out.push(((*tool).to_owned(), *n));
        }
    }
    out
}

#[test]
fn a_status_tool_with_its_own_limit_repeats_past_the_default() {
    let mut config = RepeatCounterConfig::default(); // 3 calls of one (tool, arguments)
    config.per_tool.insert("job_status".into(), 10);
    let mut counter = RepeatCounter::new(config, Vec::new());
    let mut calls = vec![("job_status", r#"{"id": 7}"#); 11];
    calls.extend([("read_file", r#"{"path": "a.py"}"#); 4]);
    assert_eq!(
        hinted(&mut counter, &calls),
        [("job_status".to_owned(), 11), ("read_file".to_owned(), 4)],
        "the status check's own limit is 10; every other tool keeps the default 3"
    );
}

#[test]
fn a_polling_tool_is_never_counted() {
    let mut counter = RepeatCounter::new(RepeatCounterConfig::default(), vec!["job_status".into()]);
    let calls = vec![("job_status", r#"{"id": 7}"#); 50];
    assert!(hinted(&mut counter, &calls).is_empty());
}
