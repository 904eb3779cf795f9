//! The event stream `codex exec --json` prints: lines `{"type": "thread.started" | "turn.started"
//! | "item.started" | "item.updated" | "item.completed" | "turn.completed" | "turn.failed" |
//! "error", ...}`. Only completed items are read; an item is `agent_message` (`text`),
//! `command_execution` (`command`, `aggregated_output`, `exit_code`), `file_change`
//! (`changes`, `status`), `mcp_tool_call` (`server`, `tool`, `arguments`, `result`, `error`),
//! `web_search` (`query`), or bookkeeping (`reasoning`, `todo_list`, `error`).
//!
//! Each command, patch, MCP call and search is a call with its result (an error when a command
//! exits other than 0 or an item failed). The stream does not hold the prompt: each turn opens
//! with a user message saying so.

use looprail::core::message::{Message, ToolCall, ToolResult};
use serde_json::Value;

use super::text_of;

/// The user message that stands for a turn's prompt, which the stream does not print.
const PROMPT_NOT_LOGGED: &str = "(the prompt is not in the log)";

/// True for an exec event stream: a `thread.started` line, or completed items.
pub fn detect(lines: &[Value]) -> bool {
    let kind = |l: &Value| l.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
    lines.iter().take(10).any(|l| kind(l) == "thread.started")
        || lines.iter().take(10).any(|l| kind(l) == "item.completed" && l.pointer("/item/type").is_some())
}

/// The calls and texts of the stream's completed items, turn by turn.
pub fn messages(lines: &[Value]) -> Vec<Message> {
    let mut messages = Vec::with_capacity(lines.len());
    for line in lines {
        match line.get("type").and_then(Value::as_str).unwrap_or_default() {
            "turn.started" => messages.push(Message::user(PROMPT_NOT_LOGGED)),
            "item.completed" => {
                let Some(item) = line.get("item") else { continue };
                if messages.is_empty() {
                    messages.push(Message::user(PROMPT_NOT_LOGGED));
                }
                push_item(item, &mut messages);
            }
            _ => {}
        }
    }
    messages
}

/// One completed item as messages: a text, or a call and its result.
fn push_item(item: &Value, messages: &mut Vec<Message>) {
    let field = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or_default();
    let failed_status = matches!(field("status"), "failed" | "declined");
    let (name, arguments, output, failed) = match field("type") {
        "agent_message" => {
            messages.push(Message::assistant(field("text")));
            return;
        }
        "command_execution" => {
            let exit = item.get("exit_code").and_then(Value::as_i64);
            let arguments = serde_json::json!({ "command": field("command") });
            (
                "shell".to_owned(),
                arguments,
                field("aggregated_output").to_owned(),
                failed_status || exit.is_some_and(|c| c != 0),
            )
        }
        "file_change" => {
            let arguments =
                serde_json::json!({ "changes": item.get("changes").cloned().unwrap_or(Value::Null) });
            ("apply_patch".to_owned(), arguments, field("status").to_owned(), failed_status)
        }
        "mcp_tool_call" => {
            let error = item.pointer("/error/message").and_then(Value::as_str);
            let output = match error {
                Some(error) => error.to_owned(),
                None => text_of(item.pointer("/result/content")),
            };
            let arguments = item.get("arguments").cloned().unwrap_or(Value::Null);
            (
                format!("{}.{}", field("server"), field("tool")),
                arguments,
                output,
                failed_status || error.is_some(),
            )
        }
        "web_search" => {
            ("web_search".to_owned(), serde_json::json!({ "query": field("query") }), String::new(), false)
        }
        // Reasoning, the plan and the harness's own warnings are no step of the agent's.
        _ => return,
    };
    let id = field("id");
    messages.push(Message::assistant_with_calls(None, vec![ToolCall::new(id, name, arguments.to_string())]));
    messages.push(Message::tool_result(if failed {
        ToolResult::error(id, output)
    } else {
        ToolResult::ok(id, output)
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completed_items_become_calls_and_texts() {
        let lines: Vec<Value> = [
            r#"{"type":"thread.started","thread_id":"019a"}"#,
            r#"{"type":"turn.started"}"#,
            r#"{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"cargo test","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"cargo test","aggregated_output":"1 failed","exit_code":101,"status":"completed"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_1","type":"reasoning","text":"fix it"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[{"path":"src/lib.rs","kind":"update"}],"status":"completed"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_3","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"q":"x"},"result":{"content":[{"type":"text","text":"found"}]},"status":"completed"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_4","type":"agent_message","text":"Fixed."}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":23552,"cached_input_tokens":6016,"output_tokens":41}}"#,
        ]
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
        assert!(detect(&lines));
        let messages = messages(&lines);
        let calls: Vec<&ToolCall> = messages.iter().flat_map(Message::tool_calls).collect();
        let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["shell", "apply_patch", "docs.search"], "the started item is not a call again");
        assert_eq!(calls[0].arguments, r#"{"command":"cargo test"}"#);
        let results: Vec<&ToolResult> = messages.iter().flat_map(Message::tool_results).collect();
        assert_eq!(results.iter().map(|r| r.is_error).collect::<Vec<_>>(), [true, false, false]);
        assert_eq!(results[2].content, "found");
        assert_eq!(messages[0].joined_text().as_deref(), Some(PROMPT_NOT_LOGGED));
        assert_eq!(messages.last().and_then(Message::joined_text).as_deref(), Some("Fixed."));
        assert!(!detect(&[serde_json::json!({"type": "session_meta", "payload": {}})]));
    }
}
