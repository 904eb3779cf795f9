//! `looprail audit` finds replies that repeat one block over and over (B14) in logs that keep
//! whole replies (Claude Code, Codex): it lists each with where the repetition began, counts
//! the bytes a live run would not have read, and replays the guard's answer: a recovery for
//! the first, a rung of the ladder for a second one soon after (issues 35, 67).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail::LooprailConfig;
use looprail::core::watch::WatchedPart;
use serde_json::json;

fn audit_text(name: &str, text: &str, config: &LooprailConfig) -> looprail_audit::AuditReport {
    let dir = tempfile::Builder::new().prefix("looprail-audit-degenerate-").tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    looprail_audit::audit(&[path], config, false).unwrap()
}

/// A 200-character block, as in the reproduction.
fn block() -> String {
    let sentence = "I should look at the configuration loader once more before I change anything. ";
    sentence.repeat(3)[..200].to_owned()
}

fn claude_code_log(chant: &str, ending: &str) -> String {
    let line = |value: serde_json::Value| value.to_string();
    [
        line(json!({"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "Why does the config not load?"}})),
        line(json!({"type": "assistant", "uuid": "u2", "sessionId": "s", "message": {"id": "m1", "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/w/config.rs"}}]}})),
        line(json!({"type": "user", "uuid": "u3", "sessionId": "s", "message": {"role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "fn load() {}"}]}})),
        line(json!({"type": "assistant", "uuid": "u4", "sessionId": "s", "message": {"id": "m2", "role": "assistant",
            "content": [{"type": "text", "text": chant}, {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "cargo test"}}]}})),
        line(json!({"type": "user", "uuid": "u5", "sessionId": "s", "message": {"role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "ok"}]}})),
        line(json!({"type": "assistant", "uuid": "u6", "sessionId": "s", "message": {"id": "m3", "role": "assistant",
            "content": [{"type": "text", "text": ending}]}})),
    ]
    .join("\n")
        + "\n"
}

#[test]
fn a_claude_code_reply_chanting_one_block_is_listed_cut_and_recovered_from() {
    let intro = "Let me think about this. ";
    let chant = format!("{intro}{}", block().repeat(300));
    let log = claude_code_log(&chant, "The loader is never called.");
    let report = audit_text("session.jsonl", &log, &LooprailConfig::default());
    let run = &report.runs[0];
    assert_eq!(run.degenerate_replies.len(), 1, "{:?}", run.degenerate_replies);
    let found = &run.degenerate_replies[0];
    assert_eq!((found.turn, found.calls_before, found.part), (2, 1, WatchedPart::Text));
    assert_eq!(found.period, 200);
    assert_eq!(found.read_bytes, chant.len() as u64);
    // Cut where the repetition began, one copy kept (within a block of it).
    assert!(found.kept_bytes >= intro.len() as u64 && found.kept_bytes <= (intro.len() + 2 * 200) as u64);
    assert_eq!(report.summary.degenerate_replies, 1);
    assert_eq!(report.summary.degenerate_bytes_cut, found.read_bytes - found.kept_bytes);
    // The guard answers as in a live run: a recovery, no rung of the ladder, the run goes on.
    let answers: Vec<_> = run.events.iter().filter(|e| e.detector == "degenerate_reply").collect();
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!((answers[0].level.as_str(), answers[0].call_index), ("recovery", 1));
    assert_eq!(run.stopped_at, None);
    // The table and the page say it.
    let table = looprail_audit::render::table::render(&report);
    assert!(
        table.contains("degenerate replies: 1") && table.contains("repeated a 200-byte block"),
        "{table}"
    );
    let page = looprail_audit::render::html::render(&report);
    assert!(page.contains("id=\"degenerate\"") && page.contains("repeated a 200-byte block"));
}

#[test]
fn a_second_chanting_reply_soon_after_climbs_the_ladder() {
    let chant = block().repeat(300);
    let report = audit_text("session.jsonl", &claude_code_log(&chant, &chant), &LooprailConfig::default());
    let run = &report.runs[0];
    assert_eq!(run.degenerate_replies.len(), 2, "{:?}", run.degenerate_replies);
    let levels: Vec<&str> =
        run.events.iter().filter(|e| e.detector == "degenerate_reply").map(|e| e.level.as_str()).collect();
    assert_eq!(levels, ["recovery", "nudge"]);
}

#[test]
fn a_codex_call_whose_arguments_repeat_is_found_apart_from_its_text() {
    let payload = |value: serde_json::Value| {
        json!({"timestamp": "t", "type": "response_item", "payload": value}).to_string()
    };
    let arguments =
        json!({"command": ["bash", "-lc", format!("cat <<'EOF' > notes.md\n{}EOF", block().repeat(100))]});
    let lines = [
        json!({"timestamp": "t", "type": "session_meta", "payload": {"id": "s1", "cwd": "/w"}}).to_string(),
        payload(
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Write the notes"}]}),
        ),
        payload(
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Writing them."}]}),
        ),
        payload(
            json!({"type": "function_call", "name": "shell", "arguments": arguments.to_string(), "call_id": "call_1"}),
        ),
        payload(json!({"type": "function_call_output", "call_id": "call_1", "output": "{\"output\":\"\"}"})),
        payload(
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}),
        ),
    ];
    let report = audit_text("rollout.jsonl", &(lines.join("\n") + "\n"), &LooprailConfig::default());
    let found = &report.runs[0].degenerate_replies;
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].part, WatchedPart::Arguments { index: 0 });
    assert!(found[0].repeats >= 10, "arguments need more copies than text: {}", found[0].repeats);
}

#[test]
fn ordinary_replies_and_a_watch_turned_off_find_nothing() {
    // Ten copies of a short line are an ordinary list, not a chant.
    let list = (1..=40).map(|i| format!("- step {i}: run the tests again\n")).collect::<String>();
    let report = audit_text("session.jsonl", &claude_code_log(&list, "Done."), &LooprailConfig::default());
    assert!(report.runs[0].degenerate_replies.is_empty(), "{:?}", report.runs[0].degenerate_replies);
    assert!(!looprail_audit::render::table::render(&report).contains("degenerate replies"));

    let mut config = LooprailConfig::default();
    config.guardrails.degenerate_reply.enabled = false;
    let chant = block().repeat(50);
    let report = audit_text("session.jsonl", &claude_code_log(&chant, "Done."), &config);
    assert!(report.runs[0].degenerate_replies.is_empty());
    assert!(report.runs[0].events.iter().all(|e| e.detector != "degenerate_reply"));
}
