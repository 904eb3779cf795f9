//! Gemini CLI sessions (`~/.gemini/tmp/<project>/chats/session-*`): a document
//! `{"sessionId", "projectHash", "startTime", "lastUpdated", "messages": [...]}`, or JSONL whose
//! first line is that header, then messages and `{"$set": {...}}` updates, a message written
//! again when its tool calls finish (the last copy of an `id` wins), and `{"$rewindTo": id}`
//! where the person rewound the session (that message and every later one are gone). A message is
//! `{"id", "type": "user" | "gemini" | "info" | "error" | "warning", "content", "toolCalls"?}`;
//! a Gemini message's `toolCalls` are `{"id", "name", "args", "status", "result"}`, `result`
//! holding the `functionResponse` parts the model was sent.
//!
//! `info`, `error` and `warning` messages are the CLI's own notices, never sent to the model.

use std::collections::HashMap;

use looprail::core::message::{Message, ToolCall, ToolResult};
use serde_json::Value;

use super::text_of;

/// True for a session document: a `sessionId` and messages typed as the CLI types them.
pub fn detect_document(doc: &Value) -> bool {
    doc.get("sessionId").is_some()
        && doc.get("messages").and_then(Value::as_array).is_some_and(|m| is_session(m))
}

/// True for a session's JSONL lines: a header line with a `sessionId`, then messages.
pub fn detect_lines(lines: &[Value]) -> bool {
    lines.first().is_some_and(|header| header.get("sessionId").is_some() && header.get("type").is_none())
        && is_session(&lines[1..])
}

/// Messages typed `user` / `gemini` and none with a chat `role`.
fn is_session(messages: &[Value]) -> bool {
    let kind = |m: &Value| m.get("type").and_then(Value::as_str).map(str::to_owned);
    messages.iter().any(|m| matches!(kind(m).as_deref(), Some("user" | "gemini")))
        && messages.iter().all(|m| m.get("role").is_none())
}

/// The conversation, the last copy of each message id in the place of its first.
pub fn read(messages: &[Value]) -> Result<Vec<Message>, String> {
    let mut order: Vec<&Value> = Vec::with_capacity(messages.len());
    let mut at: HashMap<&str, usize> = HashMap::new();
    for message in messages {
        // The person rewound the session: that message and all after it are gone.
        if let Some(to) = message.get("$rewindTo").and_then(Value::as_str) {
            if let Some(&cut) = at.get(to) {
                order.truncate(cut);
                at.retain(|_, position| *position < cut);
            }
            continue;
        }
        if message.get("type").is_none() {
            continue;
        }
        match message.get("id").and_then(Value::as_str) {
            Some(id) if at.contains_key(id) => order[at[id]] = message,
            Some(id) => {
                at.insert(id, order.len());
                order.push(message);
            }
            None => order.push(message),
        }
    }
    let mut out = Vec::with_capacity(order.len() * 2);
    for message in order {
        let text = text_of(message.get("content"));
        match message.get("type").and_then(Value::as_str).unwrap_or_default() {
            "user" => out.push(Message::user(text)),
            "gemini" => push_turn(message, text, &mut out),
            _ => {}
        }
    }
    if out.iter().all(|m| m.role != looprail::core::message::Role::User) {
        return Err("a Gemini CLI session without a user message".into());
    }
    Ok(out)
}

/// A Gemini message: its text and calls, then each call's result.
fn push_turn(message: &Value, text: String, out: &mut Vec<Message>) {
    let calls = message.get("toolCalls").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    if calls.is_empty() {
        out.push(super::assistant_turn(text, Vec::new()));
        return;
    }
    let text = Some(text).filter(|t| !t.trim().is_empty());
    let field =
        |call: &Value, key: &str| call.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    let tool_calls = calls
        .iter()
        .map(|call| {
            let arguments = call.get("args").map_or_else(|| "{}".to_owned(), Value::to_string);
            ToolCall::new(field(call, "id"), field(call, "name"), arguments)
        })
        .collect();
    out.push(Message::assistant_with_calls(text, tool_calls));
    for call in calls {
        let failed = matches!(field(call, "status").as_str(), "error" | "cancelled");
        let output = result_text(call);
        let id = field(call, "id");
        out.push(Message::tool_result(if failed {
            ToolResult::error(id, output)
        } else {
            ToolResult::ok(id, output)
        }));
    }
}

/// What the model was sent for a call: its `functionResponse` parts' output (or error), else
/// what the CLI displayed.
fn result_text(call: &Value) -> String {
    let parts = call.get("result").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let sent: Vec<String> = parts
        .iter()
        .filter_map(|part| {
            let response = part.pointer("/functionResponse/response")?;
            Some(match response.get("output").or_else(|| response.get("error")) {
                Some(Value::String(text)) => text.clone(),
                _ => response.to_string(),
            })
        })
        .collect();
    if sent.is_empty() {
        return call.get("resultDisplay").and_then(Value::as_str).unwrap_or_default().to_owned();
    }
    sent.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, status: &str, output: &str) -> Value {
        serde_json::json!({"id": id, "name": "run_shell_command", "args": {"command": "make"}, "status": status,
            "result": [{"functionResponse": {"id": id, "name": "run_shell_command", "response": {"output": output}}}]})
    }

    #[test]
    fn a_session_document_becomes_calls_with_their_results() {
        let doc = serde_json::json!({"sessionId": "s", "projectHash": "p", "messages": [
            {"id": "u1", "type": "user", "content": [{"text": "Build it"}]},
            {"id": "i1", "type": "info", "content": "Switched model"},
            {"id": "g1", "type": "gemini", "content": "Building.", "toolCalls": [call("t1", "error", "make: *** No rule"), call("t2", "success", "ok")]},
            {"id": "g2", "type": "gemini", "content": "Done."}
        ]});
        assert!(detect_document(&doc));
        let messages = read(doc["messages"].as_array().unwrap()).unwrap();
        assert_eq!(messages.len(), 5, "user, the turn with two calls, two results, the last text");
        let results: Vec<&ToolResult> = messages.iter().flat_map(Message::tool_results).collect();
        assert_eq!(
            results.iter().map(|r| (r.content.as_str(), r.is_error)).collect::<Vec<_>>(),
            [("make: *** No rule", true), ("ok", false)]
        );
        assert!(!detect_document(&serde_json::json!({"messages": [{"role": "user", "content": "x"}]})));
    }

    #[test]
    fn in_jsonl_the_last_copy_of_a_message_wins() {
        let lines: Vec<Value> = [
            serde_json::json!({"sessionId": "s", "projectHash": "p", "startTime": "t", "kind": "main"}),
            serde_json::json!({"id": "u1", "type": "user", "content": "Build it"}),
            serde_json::json!({"$set": {"lastUpdated": "t2"}}),
            serde_json::json!({"id": "g1", "type": "gemini", "content": ""}),
            serde_json::json!({"id": "g1", "type": "gemini", "content": "", "toolCalls": [call("t1", "success", "built")]}),
            serde_json::json!({"id": "u2", "type": "user", "content": "Thanks"}),
        ]
        .into();
        assert!(detect_lines(&lines));
        let messages = read(&lines[1..]).unwrap();
        assert_eq!(messages.len(), 4, "user, the call, its result, user");
        assert_eq!(messages[1].tool_calls().count(), 1);
        assert_eq!(messages[2].tool_results().next().unwrap().content, "built");
        // Rewound to the Gemini message: it and the thanks are gone, then a new answer.
        let mut rewound = lines.clone();
        rewound.push(serde_json::json!({"$rewindTo": "g1"}));
        rewound.push(serde_json::json!({"id": "g2", "type": "gemini", "content": "Built it another way."}));
        let messages = read(&rewound[1..]).unwrap();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert_eq!(messages[1].joined_text().as_deref(), Some("Built it another way."));
    }
}
