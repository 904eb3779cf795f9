//! Cost and time limits replayed from what a log records of its replies (issue 68): a Claude
//! Code session's timestamps, models and usage and a Codex rollout's timestamps, turn models
//! and `token_count` events stop the replay where the run would have stopped; the same logs
//! replay to the end without such limits.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail::LooprailConfig;
use looprail::core::price::ModelPrice;
use serde_json::{Value, json};

fn audit_lines(
    name: &str,
    lines: &[Value],
    config: &LooprailConfig,
) -> looprail_audit::run_report::RunReport {
    let dir = tempfile::Builder::new().prefix("looprail-audit-limits-").tempdir().unwrap();
    let path = dir.path().join(name);
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&path, text.join("\n") + "\n").unwrap();
    let report = looprail_audit::audit(&[path], config, false).unwrap();
    assert_eq!(report.runs.len(), 1, "{:?}", report.errors);
    report.runs.into_iter().next().unwrap()
}

/// ISO 8601 time `minutes` after 09:00 UTC.
fn at(minutes: u64, seconds: u64) -> String {
    format!("2026-12-01T{:02}:{:02}:{seconds:02}.000Z", 9 + minutes / 60, minutes % 60)
}

/// A Claude Code session: a prompt, then `calls` distinct Bash calls a minute apart, each
/// reply reporting 100k input tokens (mostly cache reads) and 1k output tokens.
fn claude_session(calls: u64) -> Vec<Value> {
    let mut lines = vec![json!({"type": "user", "uuid": "u0", "sessionId": "s", "timestamp": at(0, 0),
        "message": {"role": "user", "content": "Fix the build."}})];
    for n in 0..calls {
        let usage = json!({"input_tokens": 10_000, "cache_read_input_tokens": 90_000, "cache_creation_input_tokens": 0, "output_tokens": 1_000});
        lines.push(json!({"type": "assistant", "uuid": format!("a{n}"), "sessionId": "s", "timestamp": at(n, 30),
            "message": {"id": format!("msg_{n}"), "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                "content": [{"type": "tool_use", "id": format!("t{n}"), "name": "Bash", "input": {"command": format!("ls dir{n}")}}],
                "usage": usage}}));
        lines.push(json!({"type": "user", "uuid": format!("r{n}"), "sessionId": "s", "timestamp": at(n + 1, 0),
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{n}"), "content": format!("file{n}.txt")}]}}));
    }
    lines
}

fn priced(cost_limit: Option<f64>) -> LooprailConfig {
    let mut config = LooprailConfig::default();
    let price = ModelPrice { input_per_mtok: 1.0, output_per_mtok: 10.0, ..ModelPrice::default() };
    config.loop_.prices = config.loop_.prices.with("claude-sonnet-4-5", price).with("gpt-5-codex", price);
    config.loop_.budget.cost_limit = cost_limit;
    (config.loop_.budget.soft_time_limit_secs, config.loop_.budget.hard_time_limit_secs) = (0, 0);
    config
}

#[test]
fn a_claude_code_sessions_cost_and_time_stop_the_replay() {
    let session = claude_session(30);
    // 0.11 a reply at these prices: the 10th request would pass a limit of 1.0.
    let run = audit_lines("session.jsonl", &session, &priced(Some(1.0)));
    assert_eq!((run.stop_reason.as_deref(), run.stopped_at), (Some("limit:cost_limit"), Some(9)), "{run:?}");
    let run = audit_lines("session.jsonl", &session, &priced(None));
    assert_eq!(run.stop_reason, None, "no limit: the whole run");
    let mut timed = priced(None);
    timed.loop_.budget.soft_time_limit_secs = 20 * 60;
    let run = audit_lines("session.jsonl", &session, &timed);
    // The 21st request goes out at 20 minutes (the line before it, 09:20:00).
    assert_eq!((run.stop_reason.as_deref(), run.stopped_at), (Some("limit:soft_time_limit"), Some(19)));
}

#[test]
fn a_codex_rollouts_token_counts_and_times_stop_the_replay() {
    let mut lines = vec![
        json!({"timestamp": at(0, 0), "type": "session_meta", "payload": {"id": "s", "cwd": "/w", "cli_version": "0.169.0"}}),
        json!({"timestamp": at(0, 0), "type": "turn_context", "payload": {"cwd": "/w", "model": "gpt-5-codex"}}),
        json!({"timestamp": at(0, 0), "type": "response_item", "payload": {"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "Fix the build."}]}}),
    ];
    for n in 0..30 {
        lines.push(json!({"timestamp": at(n, 30), "type": "response_item", "payload": {"type": "function_call",
            "name": "exec_command", "arguments": json!({"cmd": format!("ls dir{n}")}).to_string(), "call_id": format!("c{n}")}}));
        lines.push(json!({"timestamp": at(n, 31), "type": "event_msg", "payload": {"type": "token_count", "info": {
            "last_token_usage": {"input_tokens": 100_000, "cached_input_tokens": 90_000, "output_tokens": 1_000, "reasoning_output_tokens": 0}}}}));
        lines.push(json!({"timestamp": at(n + 1, 0), "type": "response_item", "payload": {"type": "function_call_output",
            "call_id": format!("c{n}"), "output": format!("file{n}.txt")}}));
    }
    let run = audit_lines("rollout-2026-12-01T09-00-00-s.jsonl", &lines, &priced(Some(1.0)));
    assert_eq!((run.stop_reason.as_deref(), run.stopped_at), (Some("limit:cost_limit"), Some(9)), "{run:?}");
    let mut timed = priced(None);
    timed.loop_.budget.hard_time_limit_secs = 20 * 60;
    let run = audit_lines("rollout-2026-12-01T09-00-00-s.jsonl", &lines, &timed);
    assert_eq!((run.stop_reason.as_deref(), run.stopped_at), (Some("limit:timeout"), Some(19)));
}
