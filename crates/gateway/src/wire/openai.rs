//! OpenAI Chat Completions.

use looprail_loop_core::message::{Message, ToolCall, ToolResult};
use serde_json::{Value, json};

use super::text_of;

pub(super) fn messages(body: &Value) -> Result<Vec<Message>, String> {
    let list = body["messages"].as_array().ok_or("`messages` must be an array")?;
    list.iter().enumerate().map(|(i, m)| message(i, m)).collect()
}

/// One wire message (`messages[i]`) as a looprail message.
pub(super) fn message(i: usize, m: &Value) -> Result<Message, String> {
    let text = text_of(&m["content"]);
    Ok(match m["role"].as_str() {
        Some("system" | "developer") => Message::system(text),
        Some("user") => Message::user(text),
        Some("assistant") => {
            let calls = m["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    let arguments = match &c["function"]["arguments"] {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    ToolCall::new(
                        c["id"].as_str().unwrap_or_default(),
                        c["function"]["name"].as_str().unwrap_or_default(),
                        arguments,
                    )
                })
                .collect();
            Message::assistant_with_calls(Some(text).filter(|t| !t.is_empty()), calls)
        }
        Some("tool") => {
            Message::tool_result(ToolResult::ok(m["tool_call_id"].as_str().unwrap_or_default(), text))
        }
        other => return Err(format!("messages[{i}]: unknown role {other:?}")),
    })
}

pub(super) fn add_instruction(body: &mut Value, text: &str) {
    if let Some(list) = body["messages"].as_array_mut() {
        list.push(json!({ "role": "user", "content": text }));
    }
}

pub(super) fn reply_message(response: &Value) -> Option<Message> {
    let message = response.pointer("/choices/0/message")?;
    let wrapped = json!({ "messages": [message] });
    messages(&wrapped).ok()?.pop()
}

fn chunk(response: &Value, delta: Value, finish: Option<&str>) -> String {
    let body = json!({
        "id": response["id"],
        "object": "chat.completion.chunk",
        "created": response["created"],
        "model": response["model"],
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
    });
    format!("data: {body}\n\n")
}

pub(super) fn to_stream(response: &Value, include_usage: bool) -> String {
    let message = &response["choices"][0]["message"];
    let mut out = chunk(response, json!({ "role": "assistant", "content": "" }), None);
    if let Some(text) = message["content"].as_str().filter(|t| !t.is_empty()) {
        out.push_str(&chunk(response, json!({ "content": text }), None));
    }
    for (index, call) in message["tool_calls"].as_array().into_iter().flatten().enumerate() {
        let delta = json!({ "tool_calls": [{
            "index": index, "id": call["id"], "type": "function",
            "function": { "name": call["function"]["name"], "arguments": call["function"]["arguments"] },
        }]});
        out.push_str(&chunk(response, delta, None));
    }
    let finish = response["choices"][0]["finish_reason"].as_str().unwrap_or("stop");
    out.push_str(&chunk(response, json!({}), Some(finish)));
    if include_usage {
        let body = json!({
            "id": response["id"], "object": "chat.completion.chunk", "created": response["created"],
            "model": response["model"], "choices": [], "usage": response["usage"],
        });
        out.push_str(&format!("data: {body}\n\n"));
    }
    out.push_str("data: [DONE]\n\n");
    out
}
