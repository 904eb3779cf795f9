//! OpenAI Chat Completions.

use looprail_loop_core::message::{Message, ToolResult};
use looprail_loop_core::transcript::openai_tool_call;
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
                .map(|c| openai_tool_call(c).map_err(|e| format!("messages[{i}]: {e}")))
                .collect::<Result<_, _>>()?;
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
    message(0, response.get("choices")?.get(0)?.get("message")?).ok()
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
        // A custom tool's call (`custom`: name and free-text input) goes as it came.
        let delta = match call.get("custom") {
            Some(custom) => json!({ "tool_calls": [{
                "index": index, "id": call["id"], "type": "custom", "custom": custom,
            }]}),
            None => json!({ "tool_calls": [{
                "index": index, "id": call["id"], "type": "function",
                "function": { "name": call["function"]["name"], "arguments": call["function"]["arguments"] },
            }]}),
        };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_custom_tools_call_is_read_and_streamed_as_it_came() {
        let call = json!({"id": "call_1", "type": "custom", "custom": {"name": "apply_patch", "input": "*** Begin Patch"}});
        let read = message(0, &json!({"role": "assistant", "content": null, "tool_calls": [call]})).unwrap();
        let read = read.tool_calls().next().unwrap();
        assert_eq!((read.name.as_str(), read.arguments.as_str()), ("apply_patch", "*** Begin Patch"));
        let response = json!({"id": "r", "created": 1, "model": "m", "choices": [{"index": 0,
            "message": {"role": "assistant", "content": null, "tool_calls": [call]}, "finish_reason": "tool_calls"}]});
        let stream = to_stream(&response, false);
        let delta = stream.lines().find(|l| l.contains("tool_calls")).unwrap();
        let delta: Value = serde_json::from_str(delta.trim_start_matches("data: ")).unwrap();
        assert_eq!(delta["choices"][0]["delta"]["tool_calls"][0]["custom"], call["custom"]);
        assert!(message(0, &json!({"role": "assistant", "tool_calls": [{"type": "function"}]})).is_err());
    }
}
