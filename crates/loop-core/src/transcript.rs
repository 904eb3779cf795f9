//! Recorded conversations in the OpenAI Chat Completions message format, read into
//! [`Message`]s (for replay and audit of real logs, B5).
//!
//! Real logs carry no error flag on tool results; every result comes back with
//! `is_error: false` and classifying it is the caller's job.

use serde_json::Value;
use serde_json::value::RawValue;

use crate::message::{ContentPart, Message, Role, ToolCall, ToolResult};

mod openai_typed;
pub mod responses;

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

/// One entry of an OpenAI chat message's `tool_calls`: a function's call (`function`, its
/// `name` and JSON `arguments`) or a custom tool's (`custom`, its `name` and free-text `input`,
/// which is the call's arguments). The error says what is missing.
pub fn openai_tool_call(call: &Value) -> Result<ToolCall, &'static str> {
    let id = call.get("id").and_then(Value::as_str).ok_or("tool call without `id`")?;
    let (body, arguments_key) = match (call.get("function"), call.get("custom")) {
        (Some(function), _) => (function, "arguments"),
        (None, Some(custom)) => (custom, "input"),
        (None, None) => return Err("tool call without `function`"),
    };
    let (name, arguments) = named_call(body, arguments_key).ok_or("tool call without a name")?;
    Ok(ToolCall::new(id, name, arguments))
}

/// A call's name and arguments from `{"name", <arguments_key>}`: text as it is, any other
/// value as its JSON, none as no text. `None` without a name.
fn named_call<'a>(body: &'a Value, arguments_key: &str) -> Option<(&'a str, String)> {
    let name = body.get("name").and_then(Value::as_str)?;
    let arguments = match body.get(arguments_key) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    Some((name, arguments))
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
                    calls.push(openai_tool_call(call).map_err(fail)?);
                }
                // The legacy single call (`function_call`, before `tool_calls`) has no id: the
                // `function` message answering it names the function, so the name is its id.
                if let Some(call) = value.get("function_call").filter(|c| !c.is_null()) {
                    let (name, arguments) = named_call(call, "arguments")
                        .ok_or_else(|| fail("`function_call` without a name"))?;
                    calls.push(ToolCall::new(name, name, arguments));
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

fn anthropic_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Reads Anthropic Messages-format messages (`content` as a string or blocks: `text`,
/// `tool_use`, `tool_result`); a `tool_result` becomes a tool message, keeping its `is_error`.
pub fn from_anthropic_messages(raw: &[Value]) -> Result<Vec<Message>, TranscriptError> {
    let mut out = Vec::with_capacity(raw.len());
    for (index, value) in raw.iter().enumerate() {
        let fail = |reason: &str| TranscriptError { index, reason: reason.to_owned() };
        let role = value.get("role").and_then(Value::as_str).ok_or_else(|| fail("no `role`"))?;
        let content = value.get("content").cloned().unwrap_or(Value::Null);
        let blocks: Vec<Value> = match &content {
            Value::Array(blocks) => blocks.clone(),
            _ => Vec::new(),
        };
        match role {
            "assistant" => {
                let mut calls = Vec::new();
                for block in
                    blocks.iter().filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
                {
                    let id = block
                        .get("id")
                        .and_then(Value::as_str)
                        .ok_or_else(|| fail("tool_use without `id`"))?;
                    let name = block
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or_else(|| fail("tool_use without `name`"))?;
                    let input = block.get("input").cloned().unwrap_or_else(|| serde_json::json!({}));
                    calls.push(ToolCall::new(id, name, input.to_string()));
                }
                out.push(Message::assistant_with_calls(Some(anthropic_text(&content)), calls));
            }
            "user" => {
                for block in
                    blocks.iter().filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                {
                    let id = block
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .ok_or_else(|| fail("tool_result without `tool_use_id`"))?;
                    let text = anthropic_text(block.get("content").unwrap_or(&Value::Null));
                    let mut result = ToolResult::ok(id, text);
                    result.is_error = block.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                    out.push(Message {
                        role: Role::Tool,
                        content: vec![ContentPart::ToolResult(result)],
                        internal: None,
                    });
                }
                let text = anthropic_text(&content);
                if !text.is_empty() {
                    out.push(Message::user(text));
                }
            }
            "system" => out.push(Message::system(anthropic_text(&content))),
            other => return Err(fail(&format!("unknown role `{other}`"))),
        }
    }
    Ok(out)
}

/// The two log formats [`read_log`] recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// OpenAI Chat Completions messages.
    OpenAiChat,
    /// Anthropic Messages.
    AnthropicMessages,
}

/// Tells the formats apart: `tool_use`/`tool_result` blocks mean Anthropic; otherwise OpenAI.
pub fn detect_format(raw: &[Value]) -> LogFormat {
    let anthropic = raw.iter().any(|m| {
        m.get("content").and_then(Value::as_array).is_some_and(|blocks| {
            blocks
                .iter()
                .any(|b| matches!(b.get("type").and_then(Value::as_str), Some("tool_use" | "tool_result")))
        })
    });
    if anthropic { LogFormat::AnthropicMessages } else { LogFormat::OpenAiChat }
}

/// The fields of a log document read here; the rest is skipped without being built.
#[derive(serde::Deserialize)]
struct Document<'a> {
    #[serde(borrow, default)]
    messages: Option<&'a RawValue>,
    #[serde(borrow, default)]
    system: Option<&'a RawValue>,
}

/// A log document whose `messages` is an array: its messages split out in the same pass.
#[derive(serde::Deserialize)]
struct ListedDocument<'a> {
    #[serde(borrow)]
    messages: Vec<&'a RawValue>,
    #[serde(borrow, default)]
    system: Option<&'a RawValue>,
}

/// A document's Anthropic `system` text, when it has one.
fn system_text(system: Option<&RawValue>) -> Option<String> {
    system
        .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
        .map(|s| anthropic_text(&s))
        .filter(|s| !s.is_empty())
}

/// True when a message holds `tool_use` or `tool_result` blocks (Anthropic's). Only a message
/// that names one of them is parsed to check.
fn has_anthropic_blocks(raw: &RawValue) -> bool {
    let text = raw.get();
    (text.contains("\"tool_use\"") || text.contains("\"tool_result\""))
        && serde_json::from_str::<Value>(text)
            .is_ok_and(|m| detect_format(std::slice::from_ref(&m)) == LogFormat::AnthropicMessages)
}

/// The messages of a log as borrowed slices of `text` (no JSON tree is built for the whole
/// log), and its Anthropic `system` text.
fn raw_messages(text: &str) -> Result<(Option<String>, Vec<&RawValue>), TranscriptError> {
    let fail = |reason: &str| TranscriptError { index: 0, reason: reason.to_owned() };
    let trimmed = text.trim();
    if trimmed.starts_with('{') {
        // The usual shape in one pass; anything else is looked at field by field.
        if let Ok(doc) = serde_json::from_str::<ListedDocument<'_>>(trimmed) {
            return Ok((system_text(doc.system), doc.messages));
        }
        if let Ok(doc) = serde_json::from_str::<Document<'_>>(trimmed) {
            let messages = doc
                .messages
                .and_then(|raw| serde_json::from_str::<Vec<&RawValue>>(raw.get()).ok())
                .ok_or_else(|| fail("a document without a `messages` array"))?;
            return Ok((system_text(doc.system), messages));
        }
    } else if trimmed.starts_with('[') {
        if let Ok(messages) = serde_json::from_str::<Vec<&RawValue>>(trimmed) {
            return Ok((None, messages));
        }
    } else if serde_json::from_str::<serde::de::IgnoredAny>(trimmed).is_ok() {
        return Err(fail("neither a document nor a list of messages"));
    }
    // Not one JSON document: JSONL, one message per line.
    let mut messages = Vec::new();
    for (index, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let raw = serde_json::from_str::<&RawValue>(line)
            .map_err(|e| TranscriptError { index, reason: format!("line {} is not JSON: {e}", index + 1) })?;
        messages.push(raw);
    }
    Ok((None, messages))
}

/// Reads a recorded run: a `{"messages": [...]}` document (an Anthropic `system` field is kept),
/// a bare JSON array of messages, or JSONL with one message per line, in either format.
///
/// The log is read one message at a time: besides the text, memory holds the messages read so
/// far and one message's JSON, never a tree of the whole log.
pub fn read_log(text: &str) -> Result<(LogFormat, Vec<Message>), TranscriptError> {
    // The usual document in one pass; anything else message by message.
    if text.trim_start().starts_with('{')
        && let Some(messages) = openai_typed::read_document(text)
    {
        return Ok((LogFormat::OpenAiChat, messages));
    }
    read_log_by_message(text)
}

/// [`read_log`] one message at a time: the messages split out as raw JSON, the format told
/// from their blocks, each message read typed when it can be and as a tree otherwise.
fn read_log_by_message(text: &str) -> Result<(LogFormat, Vec<Message>), TranscriptError> {
    let (system, raw) = raw_messages(text)?;
    let format = if raw.iter().any(|m| has_anthropic_blocks(m)) {
        LogFormat::AnthropicMessages
    } else {
        LogFormat::OpenAiChat
    };
    let mut messages = Vec::with_capacity(raw.len() + 1);
    messages.extend(system.map(Message::system));
    for (index, message) in raw.iter().enumerate() {
        if format == LogFormat::OpenAiChat
            && let Some(read) = openai_typed::read(message.get())
        {
            messages.push(read);
            continue;
        }
        let value: Value = serde_json::from_str(message.get())
            .map_err(|e| TranscriptError { index, reason: format!("not JSON: {e}") })?;
        let one = std::slice::from_ref(&value);
        let read = match format {
            LogFormat::OpenAiChat => from_openai_messages(one),
            LogFormat::AnthropicMessages => from_anthropic_messages(one),
        };
        messages.extend(read.map_err(|e| TranscriptError { index, reason: e.reason })?);
    }
    Ok((format, messages))
}

#[cfg(test)]
mod tests;
