//! Recorded conversations in the OpenAI Chat Completions message format, read into
//! [`Message`]s (for replay and audit of real logs, B5).
//!
//! Real logs carry no error flag on tool results; every result comes back with
//! `is_error: false` and classifying it is the caller's job.

use serde_json::Value;

use crate::message::{ContentPart, Message, Role, ToolCall, ToolResult};

/// A message that cannot be read, with its position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("message {index}: {reason}")]
pub struct TranscriptError {
    /// 0-based index of the offending message.
    pub index: usize,
    /// What is wrong with it.
    pub reason: String,
}

fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str).or_else(|| p.as_str()))
            .collect::<Vec<_>>()
            .join(""),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// Reads OpenAI chat-format messages (`role`, `content`, `tool_calls`, `tool_call_id`).
///
/// ```
/// use looprail_loop_core::transcript::from_openai_messages;
/// let log = serde_json::json!([
///     {"role": "user", "content": "hi"},
///     {"role": "assistant", "content": null, "tool_calls": [
///         {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
///     {"role": "tool", "tool_call_id": "c1", "content": "a.txt"}
/// ]);
/// let messages = from_openai_messages(log.as_array().unwrap()).unwrap();
/// assert_eq!(messages[1].tool_calls().next().unwrap().name, "ls");
/// ```
pub fn from_openai_messages(raw: &[Value]) -> Result<Vec<Message>, TranscriptError> {
    let mut out = Vec::with_capacity(raw.len());
    for (index, value) in raw.iter().enumerate() {
        let fail = |reason: &str| TranscriptError { index, reason: reason.to_owned() };
        let role = value.get("role").and_then(Value::as_str).ok_or_else(|| fail("no `role`"))?;
        let text = text_of(value.get("content"));
        let message = match role {
            "system" | "developer" => Message::system(text),
            "user" => Message::user(text),
            "assistant" => {
                let mut calls = Vec::new();
                for call in value.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                    let id = call
                        .get("id")
                        .and_then(Value::as_str)
                        .ok_or_else(|| fail("tool call without `id`"))?;
                    let function =
                        call.get("function").ok_or_else(|| fail("tool call without `function`"))?;
                    let name = function
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or_else(|| fail("tool call without a name"))?;
                    let arguments = match function.get("arguments") {
                        Some(Value::String(s)) => s.clone(),
                        Some(other) => other.to_string(),
                        None => String::new(),
                    };
                    calls.push(ToolCall::new(id, name, arguments));
                }
                Message::assistant_with_calls(Some(text), calls)
            }
            "tool" | "function" => {
                let id = value
                    .get("tool_call_id")
                    .or_else(|| value.get("name"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| fail("tool message without `tool_call_id`"))?;
                Message {
                    role: Role::Tool,
                    content: vec![ContentPart::ToolResult(ToolResult::ok(id, text))],
                    internal: None,
                }
            }
            other => return Err(fail(&format!("unknown role `{other}`"))),
        };
        out.push(message);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_messages_are_typed_errors_with_their_index() {
        let log = serde_json::json!([{"role": "user", "content": "hi"}, {"content": "no role"}]);
        let err = from_openai_messages(log.as_array().unwrap()).unwrap_err();
        assert_eq!(err.index, 1);
        let log = serde_json::json!([{"role": "assistant", "tool_calls": [{"function": {"name": "x"}}]}]);
        assert!(from_openai_messages(log.as_array().unwrap()).unwrap_err().reason.contains("`id`"));
        let log = serde_json::json!([{"role": "wizard", "content": "x"}]);
        assert!(from_openai_messages(log.as_array().unwrap()).is_err());
    }

    #[test]
    fn array_content_and_object_arguments_are_read() {
        let log = serde_json::json!([
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"role": "assistant", "tool_calls": [{"id": "1", "function": {"name": "f", "arguments": {"x": 1}}}]},
        ]);
        let messages = from_openai_messages(log.as_array().unwrap()).unwrap();
        assert_eq!(messages[0].joined_text().as_deref(), Some("ab"));
        assert_eq!(messages[1].tool_calls().next().unwrap().arguments, r#"{"x":1}"#);
    }
}
