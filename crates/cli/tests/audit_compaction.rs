//! `looprail audit` on logs where the agent compacted its own history (Claude Code's
//! `compact_boundary` and summary, Codex's `compacted` line): the context is measured from the
//! summary on, so the peak is the larger part, not the whole log.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

/// The audit's report for one file holding `lines` as JSONL.
fn audit_lines(dir: &Path, name: &str, lines: &[Value]) -> Value {
    let path = dir.join(name);
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&path, text.join("\n")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_looprail"))
        .args(["audit", "--json", &path.display().to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["errors"].as_array().unwrap().is_empty(), "{}", report["errors"]);
    report["runs"][0].clone()
}

/// A tool output of a few thousand tokens, different for each call.
fn big_output(i: usize) -> String {
    (0..600).map(|w| format!("line{i} word{w}")).collect::<Vec<_>>().join(" ")
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("looprail-audit-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Claude Code session lines: a request, six large reads, (a compaction), six more.
fn claude_code_session(compacted: bool, with_summary: bool) -> Vec<Value> {
    let line = |kind: &str, uuid: String, message: Value| json!({"type": kind, "uuid": uuid, "parentUuid": null, "isSidechain": false, "sessionId": "s", "message": message});
    let mut lines = vec![line("user", "u0".into(), json!({"role": "user", "content": "Read every module."}))];
    for i in 0..12 {
        if compacted && i == 6 {
            lines.push(json!({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted", "compactMetadata": {"trigger": "auto", "preTokens": 40000}, "uuid": "b", "parentUuid": null, "isSidechain": false, "sessionId": "s"}));
            if with_summary {
                let mut summary = line(
                    "user",
                    "sum".into(),
                    json!({"role": "user", "content": "This session is being continued: six modules read."}),
                );
                summary["isCompactSummary"] = json!(true);
                lines.push(summary);
            }
        }
        let id = format!("toolu_{i}");
        lines.push(line("assistant", format!("a{i}"), json!({"id": format!("m{i}"), "role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": format!("src/m{i}.rs")}}]})));
        lines.push(line("user", format!("r{i}"), json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": big_output(i)}]})));
    }
    lines.push(line(
        "assistant",
        "end".into(),
        json!({"id": "m99", "role": "assistant", "content": [{"type": "text", "text": "Read them all."}]}),
    ));
    lines
}

fn peak(run: &Value) -> f64 {
    run["tokens"]["peak"].as_u64().unwrap() as f64
}

#[test]
fn a_claude_code_compaction_restarts_the_context_at_its_summary() {
    let dir = temp_dir("cc-compact");
    let plain = audit_lines(&dir, "plain.jsonl", &claude_code_session(false, false));
    let compacted = audit_lines(&dir, "compacted.jsonl", &claude_code_session(true, true));
    // The stream keeps the boundary but not the summary: the context still restarts.
    let bare = audit_lines(&dir, "bare.jsonl", &claude_code_session(true, false));
    for run in [&compacted, &bare] {
        assert_eq!(run["tool_calls"], 12, "the calls after the compaction are replayed too");
        let ratio = peak(run) / peak(&plain);
        assert!((0.45..0.6).contains(&ratio), "peak {} of {}: {ratio}", peak(run), peak(&plain));
    }
    assert!(peak(&compacted) > peak(&bare), "the summary is part of the context after it");
    assert_eq!(compacted["tokens"]["compactions_in_log"], 1);
    assert_eq!(plain["tokens"]["compactions_in_log"], 0);
    let _ = std::fs::remove_dir_all(dir);
}

/// Codex rollout lines: six large outputs, (a `compacted` line), six more.
fn codex_rollout(compacted: Option<Value>) -> Vec<Value> {
    let item = |payload: Value| json!({"timestamp": "t", "type": "response_item", "payload": payload});
    let mut lines = vec![
        json!({"timestamp": "t", "type": "session_meta", "payload": {"id": "s", "cwd": "/w"}}),
        item(
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Read every module."}]}),
        ),
    ];
    for i in 0..12 {
        if i == 6
            && let Some(payload) = &compacted
        {
            lines.push(json!({"timestamp": "t", "type": "compacted", "payload": payload}));
        }
        let call = format!("c{i}");
        lines.push(item(json!({"type": "function_call", "name": "shell", "arguments": format!("{{\"command\":[\"cat\",\"m{i}.rs\"]}}"), "call_id": call})));
        lines.push(item(json!({"type": "function_call_output", "call_id": call, "output": big_output(i)})));
    }
    lines
}

#[test]
fn a_codex_compacted_line_restarts_the_context_with_what_it_keeps() {
    let dir = temp_dir("codex-compact");
    let plain = audit_lines(&dir, "plain.jsonl", &codex_rollout(None));
    let summary =
        audit_lines(&dir, "summary.jsonl", &codex_rollout(Some(json!({"message": "Six modules read."}))));
    // Newer rollouts keep the history Codex goes on with: here the request and one large output.
    let kept = json!({"message": "", "replacement_history": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Read every module."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": big_output(5)}]},
    ]});
    let replaced = audit_lines(&dir, "replaced.jsonl", &codex_rollout(Some(kept)));
    for run in [&summary, &replaced] {
        assert_eq!(run["tool_calls"], 12);
        let ratio = peak(run) / peak(&plain);
        assert!(ratio < 0.7, "peak {} of {}: {ratio}", peak(run), peak(&plain));
    }
    assert!(peak(&replaced) > peak(&summary), "the kept output counts after the compaction");
    assert_eq!(replaced["tokens"]["compactions_in_log"], 1);
    let _ = std::fs::remove_dir_all(dir);
}
