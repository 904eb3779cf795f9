//! Anthropic Messages.

use looprail_loop_core::json_text::json_text;
use looprail_loop_core::message::{Message, ToolCall, ToolResult};
use serde_json::{Value, json};

use super::text_of;

pub(super) fn messages(body: &Value) -> Result<Vec<Message>, String> {
    let list = body["messages"].as_array().ok_or("`messages` must be an array")?;
    let mut out = Vec::with_capacity(list.len() + 1);
    let system = text_of(&body["system"]);
    if !system.is_empty() {
        out.push(Message::system(system));
    }
    for (i, m) in list.iter().enumerate() {
        message(i, m, &mut out)?;
    }
    Ok(out)
}

/// One wire message (`messages[i]`) as looprail messages: a user turn's tool results each
/// become a tool message (then its text, if any, a user message).
pub(super) fn message(i: usize, m: &Value, out: &mut Vec<Message>) -> Result<(), String> {
    let single;
    let blocks: &[Value] = match &m["content"] {
        Value::String(text) => {
            single = [json!({ "type": "text", "text": text })];
            &single
        }
        Value::Array(blocks) => blocks,
        _ => return Err(format!("messages[{i}].content must be a string or an array")),
    };
    let text = blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    match m["role"].as_str() {
        Some("user") => {
            let results = blocks.iter().filter(|b| b["type"] == "tool_result").map(|block| {
                let id = block["tool_use_id"].as_str().unwrap_or_default();
                let content = text_of(&block["content"]);
                if block["is_error"].as_bool().unwrap_or(false) {
                    ToolResult::error(id, content)
                } else {
                    ToolResult::ok(id, content)
                }
            });
            user_turn(results, text, out);
        }
        Some("assistant") => {
            let calls = blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| {
                    ToolCall::new(
                        b["id"].as_str().unwrap_or_default(),
                        b["name"].as_str().unwrap_or_default(),
                        json_text(&b["input"]),
                    )
                })
                .collect();
            out.push(Message::assistant_with_calls(Some(text).filter(|t| !t.is_empty()), calls));
        }
        // The Messages API takes system text among the messages too (Claude Code sends its
        // environment so, after the first user turn): context, no turn.
        Some("system") => out.push(Message::system(text)),
        other => return Err(format!("messages[{i}]: unknown role {other:?}")),
    }
    Ok(())
}

/// A user turn as looprail messages: each tool result a tool message, then its text. Text
/// beside tool results is the harness's (Claude Code's reminders, a hook's feedback), as is a
/// turn of `<system-reminder>` blocks alone: context, not a new request of the user's, which
/// would start a new stretch and reset the guards.
pub(super) fn user_turn(results: impl Iterator<Item = ToolResult>, text: String, out: &mut Vec<Message>) {
    let before = out.len();
    out.extend(results.map(Message::tool_result));
    if out.len() > before || is_reminder(&text) {
        if !text.is_empty() {
            out.push(Message::system(text));
        }
    } else if !text.is_empty() {
        out.push(Message::user(text));
    }
}

/// Whether `text` is only `<system-reminder>` blocks (Claude Code's notes to the model).
fn is_reminder(text: &str) -> bool {
    let mut rest = text.trim();
    if rest.is_empty() {
        return false;
    }
    while let Some(after) = rest.strip_prefix("<system-reminder>") {
        match after.find("</system-reminder>") {
            Some(end) => rest = after[end + "</system-reminder>".len()..].trim_start(),
            None => return false,
        }
    }
    rest.is_empty()
}

/// Appends a text block to the last user message (Anthropic wants user and assistant turns
/// to alternate), or a new user message when the last one is the assistant's.
pub(super) fn add_instruction(body: &mut Value, text: &str) {
    let Some(list) = body["messages"].as_array_mut() else { return };
    let block = json!({ "type": "text", "text": text });
    match list.last_mut() {
        Some(last) if last["role"] == "user" => {
            if let Value::String(existing) = &last["content"] {
                last["content"] = json!([{ "type": "text", "text": existing }]);
            }
            if let Some(blocks) = last["content"].as_array_mut() {
                blocks.push(block);
            }
        }
        _ => list.push(json!({ "role": "user", "content": [block] })),
    }
}

pub(super) fn reply_message(response: &Value) -> Option<Message> {
    let mut out = Vec::with_capacity(1);
    if response["role"] == "assistant" {
        // A response is the assistant's message itself (its role and content): read in place.
        message(0, response, &mut out).ok()?;
    } else {
        let wrapped = json!({ "role": "assistant", "content": response["content"] });
        message(0, &wrapped, &mut out).ok()?;
    }
    out.pop()
}

fn event(kind: &str, data: Value) -> String {
    format!("event: {kind}\ndata: {data}\n\n")
}

pub(super) fn to_stream(response: &Value) -> String {
    let mut start = response.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    let mut out = event("message_start", json!({ "type": "message_start", "message": start }));
    // Every block keeps its place (a client rebuilds the message by index): the kinds streamed
    // in pieces start empty and come as deltas, any other kind (`redacted_thinking`, server
    // tools' blocks) starts whole.
    for (index, block) in response["content"].as_array().into_iter().flatten().enumerate() {
        let (start, deltas) = match block["type"].as_str() {
            Some("text") => (
                json!({ "type": "text", "text": "" }),
                vec![json!({ "type": "text_delta", "text": block["text"] })],
            ),
            Some("tool_use") => (
                json!({ "type": "tool_use", "id": block["id"], "name": block["name"], "input": {} }),
                vec![json!({ "type": "input_json_delta", "partial_json": json_text(&block["input"]) })],
            ),
            // Extended thinking: its text, then the signature the next request must send back.
            Some("thinking") => (
                json!({ "type": "thinking", "thinking": "", "signature": "" }),
                vec![
                    json!({ "type": "thinking_delta", "thinking": block["thinking"] }),
                    json!({ "type": "signature_delta", "signature": block["signature"] }),
                ],
            ),
            _ => (block.clone(), Vec::new()),
        };
        out.push_str(&event(
            "content_block_start",
            json!({ "type": "content_block_start", "index": index, "content_block": start }),
        ));
        for delta in deltas {
            out.push_str(&event(
                "content_block_delta",
                json!({ "type": "content_block_delta", "index": index, "delta": delta }),
            ));
        }
        out.push_str(&event("content_block_stop", json!({ "type": "content_block_stop", "index": index })));
    }
    out.push_str(&event(
        "message_delta",
        json!({
            "type": "message_delta",
            "delta": { "stop_reason": response["stop_reason"], "stop_sequence": response["stop_sequence"] },
            "usage": { "output_tokens": response["usage"]["output_tokens"] },
        }),
    ));
    out.push_str(&event("message_stop", json!({ "type": "message_stop" })));
    out
}
