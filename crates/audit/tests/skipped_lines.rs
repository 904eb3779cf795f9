//! A JSONL log with lines that are not JSON (a Node stack trace Claude Code wrote into its own
//! log, a truncated write in the middle) is audited from its other lines, and the report says
//! which were skipped (issue 39).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail::LooprailConfig;
use serde_json::json;

fn audit_text(name: &str, text: &str) -> looprail_audit::AuditReport {
    let dir = tempfile::Builder::new().prefix("looprail-audit-skipped-").tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    looprail_audit::audit(&[path], &LooprailConfig::default(), false).unwrap()
}

#[test]
fn a_claude_code_log_with_a_stack_trace_inside_is_read_from_its_other_lines() {
    let lines = [
        json!({"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "List files."}}).to_string(),
        "Error: EPIPE: broken pipe, write".to_owned(),
        "    at afterWriteDispatched (node:internal/stream_base_commons:161:15)".to_owned(),
        json!({"type": "assistant", "uuid": "u2", "sessionId": "s", "message": {"id": "m1", "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]}}).to_string(),
        "{\"type\": \"assistant\", \"uuid\": \"u9\", broken".to_owned(),
        json!({"type": "user", "uuid": "u3", "sessionId": "s", "message": {"role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}]}}).to_string(),
    ];
    let report = audit_text("session.jsonl", &(lines.join("\n") + "\n"));
    assert_eq!(report.runs.len(), 1);
    assert_eq!(report.runs[0].tool_calls, 1, "the call between the bad lines is read");
    assert_eq!(report.errors.len(), 1, "the skipped lines are said");
    let note = &report.errors[0];
    assert!(note.read_in_part);
    assert!(note.error.contains("3 lines are not JSON") && note.error.contains("line 2"), "{}", note.error);
    // Even when the log opens with the trace.
    let report = audit_text("first.jsonl", &(lines[1..].join("\n") + "\n" + &lines[0]));
    assert_eq!((report.runs.len(), report.runs[0].tool_calls), (1, 1));
}

#[test]
fn an_openhands_output_with_a_bad_line_keeps_its_other_runs() {
    let run = |id: &str| {
        json!({"instance_id": id, "history": [
            {"id": 0, "source": "user", "action": "message", "args": {"content": "fix it"}, "message": "fix it"},
            {"id": 1, "source": "agent", "action": "run", "args": {"command": "ls"}, "message": "ls"},
            {"id": 2, "source": "agent", "observation": "run", "content": "a.py", "cause": 1, "extras": {}}
        ]})
        .to_string()
    };
    let text = [run("a__a-1"), "Traceback (most recent call last):".to_owned(), run("b__b-2")].join("\n");
    let report = audit_text("output.jsonl", &text);
    assert_eq!(report.runs.len(), 2);
    assert!(report.errors[0].error.contains("1 line is not JSON"), "{:?}", report.errors);
}
