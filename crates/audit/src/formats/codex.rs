//! Codex CLI session rollouts (`~/.codex/sessions/.../rollout-*.jsonl`): lines
//! `{"timestamp", "type": "session_meta"|"response_item"|"event_msg"|"turn_context", "payload"}`
//! (files of 2025 before that envelope: a first line of metadata without a `type`, then the
//! response items themselves, between `{"record_type": "state"}` lines). Response items
//! are Responses-API items: `message` (`role` user/assistant/developer, `content` of
//! `input_text`/`output_text` parts), `function_call` (`name`, `arguments`, `call_id`) and its
//! `function_call_output`, `custom_tool_call` / `custom_tool_call_output`, `local_shell_call`;
//! reasoning is skipped. The environment and instruction preambles Codex sends as user
//! messages are context, not user turns; a command whose output reports an exit code other
//! than 0 failed. A `compacted` line (Codex summarised its history;
//! payload `message` and, in newer versions, `replacement_history`) restarts the context.

use looprail::core::message::{ContentPart, HISTORY_SUMMARY, Message, Role};
use looprail::core::provider::Usage;
use looprail::core::transcript::responses;
use looprail::guardrails::replay::RecordedReply;
use serde_json::Value;

/// The item a rollout's line holds, unwrapped.
fn item_of(line: &Value) -> Option<&Value> {
    match line.get("type").and_then(Value::as_str) {
        Some("response_item") => line.get("payload"),
        Some(
            "message"
            | "function_call"
            | "function_call_output"
            | "custom_tool_call"
            | "custom_tool_call_output"
            | "local_shell_call"
            | "reasoning"
            | "compacted",
        ) => Some(line),
        _ => None,
    }
}

/// True for the first line of a rollout written before the `{timestamp, type, payload}`
/// envelope (until about September 2025): the session's metadata on its own,
/// `{"id", "timestamp", "instructions", "git"}`.
pub fn is_legacy_meta(line: &Value) -> bool {
    line.get("id").is_some_and(Value::is_string)
        && line.get("timestamp").is_some()
        && line.get("type").is_none()
        && line.get("role").is_none()
}

/// True for a rollout: a `session_meta` line, a legacy metadata line followed by response
/// items (and `{"record_type": "state"}` bookkeeping lines), or response items.
pub fn detect(lines: &[Value]) -> bool {
    lines.iter().take(5).any(|l| l.get("type").and_then(Value::as_str) == Some("session_meta"))
        || lines.split_first().is_some_and(|(first, rest)| {
            is_legacy_meta(first)
                && rest.iter().all(|l| l.get("type").is_some() || l.get("record_type").is_some())
        })
        || (lines.iter().take(10).any(|l| {
            matches!(l.get("type").and_then(Value::as_str), Some("function_call" | "function_call_output"))
        }) && lines.iter().all(|l| l.get("role").is_none() || l.get("type").is_some()))
}

/// The largest prompt the rollout's `token_count` events record (`info.last_token_usage
/// .input_tokens`: the last request's input, cached tokens included, as OpenAI counts them).
pub fn logged_peak(lines: &[Value]) -> Option<u64> {
    lines
        .iter()
        .filter(|l| l.get("type").and_then(Value::as_str) == Some("event_msg"))
        .filter_map(|l| l.get("payload"))
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("token_count"))
        .filter_map(|p| p.pointer("/info/last_token_usage/input_tokens").and_then(Value::as_u64))
        .max()
}

/// What a `compacted` line (Codex compacting its history) leaves as the context: its
/// `replacement_history` when it has one (the history Codex goes on with), else its summary
/// `message`.
fn compacted_text(payload: Option<&Value>) -> Result<String, String> {
    let Some(payload) = payload else { return Ok(String::new()) };
    let Some(history) = payload.get("replacement_history").and_then(Value::as_array) else {
        return Ok(payload.get("message").and_then(Value::as_str).unwrap_or_default().to_owned());
    };
    Ok(super::flattened(&messages(history)?))
}

/// Whether a user message is one of the preambles Codex itself sends as user messages: the
/// environment, the user's instructions file (older `<user_instructions>`, newer `# AGENTS.md
/// instructions for <dir>`).
fn is_preamble(text: &str) -> bool {
    ["<environment_context>", "<user_instructions>", "# AGENTS.md instructions"]
        .iter()
        .any(|p| text.trim_start().starts_with(p))
}

/// The exit code a command's output reports, in the three shapes Codex gives the model: JSON
/// `{"output", "metadata": {"exit_code"}}`, and header lines before an `Output:` line, either
/// `Exit code: N` (the shell tool) or `Process exited with code N` (`exec_command`, whose
/// header has no code while the process still runs). `None` for any other text.
fn exit_code(output: &str) -> Option<i64> {
    if output.starts_with('{') {
        let value: Value = serde_json::from_str(output).ok()?;
        return value.pointer("/metadata/exit_code")?.as_i64();
    }
    let mut code = None;
    for line in output.lines().take(8) {
        if line == "Output:" {
            return code;
        }
        let number =
            line.strip_prefix("Exit code: ").or_else(|| line.strip_prefix("Process exited with code "));
        if let Some(number) = number {
            code = Some(number.trim().parse().ok()?);
        }
    }
    None
}

/// The conversation, read by the Responses items reader the gateway uses too
/// ([`responses`]); Codex's preambles are context (system messages), and where Codex compacted
/// its history a [`HISTORY_SUMMARY`] message holds what it went on with.
pub fn messages(lines: &[Value]) -> Result<Vec<Message>, String> {
    read(lines).map(|(messages, _)| messages)
}

/// [`messages`], with each assistant message's record: when its request went out (the time of
/// the rollout's line before it), the model of the turn (`turn_context`) and the usage the
/// `token_count` events after it report (`info.last_token_usage`, input with cached tokens as
/// OpenAI counts it; two requests merged into one message add up).
pub fn read(lines: &[Value]) -> Result<(Vec<Message>, Vec<RecordedReply>), String> {
    let mut out: Vec<Message> = Vec::new();
    let mut replies: Vec<RecordedReply> = Vec::new();
    let (mut last_ms, mut model) = (None, None);
    let mut index = 0;
    for line in lines {
        let at = line.get("timestamp").and_then(Value::as_str).and_then(super::time::epoch_ms);
        let payload = line.get("payload");
        match line.get("type").and_then(Value::as_str) {
            Some("turn_context") => {
                model = payload.and_then(|p| p.get("model")).and_then(Value::as_str).map(str::to_owned);
            }
            Some("event_msg") => {
                let used = payload
                    .filter(|p| p.get("type").and_then(Value::as_str) == Some("token_count"))
                    .and_then(|p| p.pointer("/info/last_token_usage"));
                if let (Some(used), Some(reply)) = (used, replies.last_mut()) {
                    let n = |key: &str| used.get(key).and_then(Value::as_u64).unwrap_or(0);
                    let usage = Usage {
                        input_tokens: n("input_tokens"),
                        output_tokens: n("output_tokens"),
                        cache_read_tokens: n("cached_input_tokens"),
                        ..Usage::default()
                    };
                    reply.usage.get_or_insert_with(Usage::default).add(&usage);
                }
            }
            _ => {}
        }
        if let Some(item) = item_of(line) {
            let kept = out.len();
            push(&mut out, item, index)?;
            index += 1;
            // An item either joins the last message or adds messages after it.
            for _ in out[kept..].iter().filter(|m| m.role == Role::Assistant) {
                replies.push(RecordedReply { sent_ms: last_ms.or(at), model: model.clone(), usage: None });
            }
        }
        last_ms = at.or(last_ms);
    }
    Ok((out, replies))
}

/// Adds the messages of the rollout's `index`-th item to `out`.
fn push(out: &mut Vec<Message>, item: &Value, index: usize) -> Result<(), String> {
    let mut next = match item.get("type").and_then(Value::as_str) {
        Some("compacted") => {
            vec![Message::internal_user(HISTORY_SUMMARY, compacted_text(item.get("payload"))?)]
        }
        _ => responses::item_messages(item).map_err(|e| format!("item {index}: {e}"))?,
    };
    for message in &mut next {
        if message.role == Role::User && message.joined_text().is_some_and(|t| is_preamble(&t)) {
            message.role = Role::System;
        }
        for part in &mut message.content {
            if let ContentPart::ToolResult(result) = part {
                result.is_error |= exit_code(&result.content).is_some_and(|code| code != 0);
            }
        }
    }
    responses::push_item(out, next);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rollout_becomes_a_chat_with_calls_and_outputs() {
        let log: Vec<Value> = [
            r#"{"timestamp":"t","type":"session_meta","payload":{"id":"s","cwd":"/w","cli_version":"0.46.0"}}"#,
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>cwd /w</environment_context>"}]}}"#,
            r##"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>Run make.</INSTRUCTIONS>"},{"type":"input_text","text":"<environment_context>\n</environment_context>"}]}}"##,
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Run the tests"}]}}"#,
            r#"{"timestamp":"t","type":"event_msg","payload":{"type":"user_message","message":"Run the tests"}}"#,
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"reasoning","summary":[]}}"#,
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Running them."}]}}"#,
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"cargo\",\"test\"]}","call_id":"call_1"}}"#,
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"{\"output\":\"ok\"}"}}"#,
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"All green."}]}}"#,
        ]
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
        assert!(detect(&log));
        let chat = messages(&log).unwrap();
        let roles: Vec<Role> = chat.iter().map(|m| m.role).collect();
        use Role::{Assistant, System, Tool, User};
        assert_eq!(roles, [System, System, User, Assistant, Tool, Assistant], "preambles are context");
        // One reply: its text and its call are one assistant turn, as the gateway reads it.
        assert_eq!(chat[3].joined_text().as_deref(), Some("Running them."));
        assert_eq!(chat[3].tool_calls().next().unwrap().name, "shell");
        assert_eq!(chat[4].tool_results().next().unwrap().call_id, "call_1");
    }

    #[test]
    fn a_rollout_from_before_the_envelope_is_read() {
        // Codex's rollouts until about September 2025: the metadata line has no `type`, the
        // items stand on their own lines, and `record_type` lines are bookkeeping.
        let log: Vec<Value> = [
            r#"{"id":"c1","timestamp":"2025-09-02T17:17:41.762Z","instructions":null,"git":{"branch":"main"}}"#,
            r#"{"record_type":"state"}"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n<cwd>/w</cwd>\n</environment_context>"}]}"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"list the files"}]}"#,
            r#"{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"}"#,
            r#"{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_1"}"#,
            r#"{"record_type":"state"}"#,
            r#"{"type":"function_call_output","call_id":"call_1","output":"{\"output\":\"a.txt\\n\"}"}"#,
            r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"One file."}]}"#,
        ]
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
        assert!(is_legacy_meta(&log[0]));
        assert!(detect(&log));
        let chat = messages(&log).unwrap();
        let roles: Vec<Role> = chat.iter().map(|m| m.role).collect();
        use Role::{Assistant, System, Tool, User};
        assert_eq!(roles, [System, User, Assistant, Tool, Assistant]);
        assert_eq!(chat[2].tool_calls().next().unwrap().arguments, r#"{"command":["ls"]}"#);
        // A chat log's lines are no rollout: a message has a role and no id-and-timestamp line
        // comes first.
        let chat_log: Vec<Value> =
            [r#"{"role":"user","content":"hi"}"#, r#"{"role":"assistant","content":"hello"}"#]
                .iter()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
        assert!(!detect(&chat_log));
    }

    #[test]
    fn a_command_that_exits_other_than_zero_failed() {
        // The three shapes of a command's output Codex gives the model.
        let structured = |code: i64| {
            serde_json::json!({"output": "FAILED test_a", "metadata": {"exit_code": code, "duration_seconds": 0.4}})
                .to_string()
        };
        let shell = |code: i64| format!("Exit code: {code}\nWall time: 0.4 seconds\nOutput:\nFAILED test_a");
        let unified = |code: i64| {
            format!(
                "Chunk ID: 1a2b\nWall time: 0.4000 seconds\nProcess exited with code {code}\nOriginal token count: 3\nOutput:\nFAILED test_a"
            )
        };
        for output in [structured(0), shell(0), unified(0)] {
            assert_eq!(exit_code(&output), Some(0), "{output}");
        }
        for output in [structured(2), shell(1), unified(127)] {
            assert!(exit_code(&output).is_some_and(|c| c != 0), "{output}");
        }
        // Still running, or text that only mentions an exit code, is no verdict.
        let running = "Chunk ID: 1\nWall time: 10.0 seconds\nProcess running with session ID 3\nOutput:\n...";
        let prose = "The build said:\nExit code: 1\nbut no header follows";
        for output in [running, prose, "{\"output\": \"x\"}", "{not json"] {
            assert_eq!(exit_code(output), None, "{output}");
        }
        let log: Vec<Value> = [
            r#"{"timestamp":"t","type":"session_meta","payload":{"id":"s"}}"#.to_owned(),
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}}"#.to_owned(),
            serde_json::json!({"timestamp": "t", "type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1", "output": shell(1)}}).to_string(),
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"c2"}}"#.to_owned(),
            serde_json::json!({"timestamp": "t", "type": "response_item", "payload": {"type": "function_call_output", "call_id": "c2", "output": structured(0)}}).to_string(),
        ]
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
        let errors: Vec<bool> =
            messages(&log).unwrap().iter().flat_map(|m| m.tool_results().map(|r| r.is_error)).collect();
        assert_eq!(errors, [true, false]);
    }

    #[test]
    fn the_largest_logged_request_is_the_peak() {
        let log: Vec<Value> = [
            r#"{"timestamp":"t","type":"session_meta","payload":{"id":"s"}}"#,
            r#"{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":null}}"#,
            r#"{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":14000},"last_token_usage":{"input_tokens":14000,"cached_input_tokens":2432}}}}"#,
            r#"{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":30000},"last_token_usage":{"input_tokens":16000,"cached_input_tokens":14000}}}}"#,
        ]
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
        // The last request's input (cached tokens are part of it), not the running total.
        assert_eq!(logged_peak(&log), Some(16000));
        assert_eq!(logged_peak(&log[..2]), None);
    }
}
