//! The Vercel AI SDK's messages, bare or under `messages`, in both forms apps keep them:
//!
//! - model messages (what `generateText` / `streamText` take and return in `response.messages`):
//!   an assistant's `content` holds `text` and `tool-call` parts (`toolCallId`, `toolName`,
//!   `input`, or `args` before version 5), a `tool` message's holds `tool-result` parts (`output`
//!   of type `text`, `json`, `error-text`, `error-json`, `content` or `execution-denied`; `result`
//!   and `isError` before version 5);
//! - UI messages (what `useChat` persists): `parts`, where a tool's part (`tool-<name>` or
//!   `dynamic-tool`; `tool-invocation` before version 5) holds its call and its outcome
//!   (`output`, or `errorText` in state `output-error`), and `step-start` separates the model's
//!   steps within one assistant message.
//!
//! Reasoning, files, sources and data parts are no call and no text the model was sent.

use looprail::core::message::{Message, ToolCall, ToolResult};
use serde_json::Value;

use super::{arguments_or_empty, arguments_text, assistant_turn, message_list};

/// The message list of `doc`, when it is the AI SDK's: a message has `parts`, or a content
/// part is a `tool-call` or a `tool-result`.
pub fn messages(doc: &Value) -> Option<&[Value]> {
    let list = message_list(doc)?;
    let sdk_message = |m: &Value| {
        m.get("role").is_some()
            && (m.get("parts").is_some_and(Value::is_array)
                || m.get("content").and_then(Value::as_array).is_some_and(|parts| {
                    parts.iter().any(|p| matches!(kind(p), "tool-call" | "tool-result"))
                }))
    };
    list.iter().any(sdk_message).then_some(list)
}

fn kind(part: &Value) -> &str {
    part.get("type").and_then(Value::as_str).unwrap_or_default()
}

fn field<'a>(part: &'a Value, key: &str) -> &'a str {
    part.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The conversation.
pub fn read(list: &[Value]) -> Result<Vec<Message>, String> {
    let mut out = Vec::with_capacity(list.len());
    for (index, message) in list.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or_default();
        match message.get("parts").and_then(Value::as_array) {
            Some(parts) if role == "assistant" => ui_assistant(parts, &mut out),
            Some(parts) => out.push(text_message(index, role, parts)?),
            None => match message.get("content") {
                Some(Value::Array(parts)) if role == "assistant" => model_assistant(parts, &mut out),
                Some(Value::Array(parts)) if role == "tool" => {
                    out.extend(parts.iter().filter(|p| kind(p) == "tool-result").map(model_result));
                }
                Some(Value::Array(parts)) => out.push(text_message(index, role, parts)?),
                Some(Value::String(text)) => {
                    out.push(text_message(index, role, &[Value::from(text.as_str())])?)
                }
                _ => out.push(text_message(index, role, &[])?),
            },
        }
    }
    Ok(out)
}

/// A system, user or assistant message of text parts (or bare strings).
fn text_message(index: usize, role: &str, parts: &[Value]) -> Result<Message, String> {
    let text = parts
        .iter()
        .filter_map(|p| p.as_str().or_else(|| (kind(p) == "text").then(|| field(p, "text"))))
        .collect::<Vec<_>>()
        .join("\n");
    match role {
        "system" => Ok(Message::system(text)),
        "user" => Ok(Message::user(text)),
        "assistant" => Ok(Message::assistant(text)),
        other => Err(format!("message {index}: unknown role {other:?}")),
    }
}

/// A model message's assistant turn: its text and calls, then the results of calls the
/// provider ran itself (they sit in the assistant's content).
fn model_assistant(parts: &[Value], out: &mut Vec<Message>) {
    let text: Vec<&str> = parts.iter().filter(|p| kind(p) == "text").map(|p| field(p, "text")).collect();
    let calls = parts
        .iter()
        .filter(|p| kind(p) == "tool-call")
        .map(|p| {
            let input = arguments_or_empty(p.get("input").or_else(|| p.get("args")));
            ToolCall::new(field(p, "toolCallId"), field(p, "toolName"), input)
        })
        .collect();
    out.push(assistant_turn(text.join("\n"), calls));
    out.extend(parts.iter().filter(|p| kind(p) == "tool-result").map(model_result));
}

/// A `tool-result` part as a tool message.
fn model_result(part: &Value) -> Message {
    let id = field(part, "toolCallId");
    let result = match part.get("output") {
        Some(output) => {
            let kind = kind(output);
            let text = match output.get("value") {
                Some(Value::Array(items)) if kind == "content" => items
                    .iter()
                    .filter_map(|i| i.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n"),
                Some(value) => arguments_text(value),
                None => field(output, "reason").to_owned(),
            };
            if kind.starts_with("error-") || kind == "execution-denied" {
                ToolResult::error(id, text)
            } else {
                ToolResult::ok(id, text)
            }
        }
        None => {
            let text = part.get("result").map(arguments_text).unwrap_or_default();
            let failed = part.get("isError").and_then(Value::as_bool).unwrap_or(false);
            if failed { ToolResult::error(id, text) } else { ToolResult::ok(id, text) }
        }
    };
    Message::tool_result(result)
}

/// A UI message of the assistant: one turn per step (`step-start` parts, or text after a
/// step's calls), each followed by the results its tool parts hold.
fn ui_assistant(parts: &[Value], out: &mut Vec<Message>) {
    let mut step = Step::default();
    for part in parts {
        let kind = kind(part);
        if kind == "step-start" || (kind == "text" && !step.calls.is_empty()) {
            step.flush(out);
        }
        if kind == "text" {
            step.text.push(field(part, "text").to_owned());
        } else if let Some((call, result)) = ui_tool(part) {
            step.calls.push(call);
            step.results.extend(result);
        }
    }
    step.flush(out);
}

/// One step of an assistant UI message.
#[derive(Default)]
struct Step {
    text: Vec<String>,
    calls: Vec<ToolCall>,
    results: Vec<ToolResult>,
}

impl Step {
    fn flush(&mut self, out: &mut Vec<Message>) {
        let Step { text, calls, results } = std::mem::take(self);
        if text.is_empty() && calls.is_empty() {
            return;
        }
        out.push(assistant_turn(text.join("\n"), calls));
        out.extend(results.into_iter().map(Message::tool_result));
    }
}

/// A tool part of a UI message: its call, and its result once it has one.
fn ui_tool(part: &Value) -> Option<(ToolCall, Option<ToolResult>)> {
    let kind = kind(part);
    if kind == "tool-invocation" {
        // Version 4: `{"toolInvocation": {state, toolCallId, toolName, args, result}}`.
        let invocation = part.get("toolInvocation")?;
        let id = field(invocation, "toolCallId");
        let arguments = arguments_or_empty(invocation.get("args"));
        let call = ToolCall::new(id, field(invocation, "toolName"), arguments);
        let result = invocation.get("result").map(|r| ToolResult::ok(id, arguments_text(r)));
        return Some((call, result));
    }
    let name = match kind.strip_prefix("tool-") {
        Some(name) => name,
        None if kind == "dynamic-tool" => field(part, "toolName"),
        None => return None,
    };
    let id = field(part, "toolCallId");
    let arguments = arguments_or_empty(part.get("input"));
    let result = match field(part, "state") {
        "output-error" => Some(ToolResult::error(id, field(part, "errorText"))),
        "output-denied" => Some(ToolResult::error(id, "the user denied this call")),
        _ => part.get("output").map(|o| ToolResult::ok(id, arguments_text(o))),
    };
    Some((ToolCall::new(id, name, arguments), result))
}

#[cfg(test)]
mod tests {
    use super::super::roles;
    use super::*;
    use looprail::core::message::Role;
    use serde_json::json;

    #[test]
    fn model_messages_of_both_versions_read_calls_and_results() {
        let v5 = json!({"messages": [
            {"role": "system", "content": "You help."},
            {"role": "user", "content": [{"type": "text", "text": "Weather in Faro?"}]},
            {"role": "assistant", "content": [{"type": "reasoning", "text": "hmm"}, {"type": "text", "text": "Checking."},
                {"type": "tool-call", "toolCallId": "c1", "toolName": "weather", "input": {"city": "Faro"}}]},
            {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "toolName": "weather",
                "output": {"type": "error-text", "value": "service down"}}]},
            {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c2", "toolName": "weather", "args": {"city": "Faro"}}]},
            {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c2", "toolName": "weather", "result": {"sky": "clear"}}]},
            {"role": "assistant", "content": "Clear skies."}
        ]});
        let read = read(messages(&v5).unwrap()).unwrap();
        use Role::{Assistant, System, Tool, User};
        assert_eq!(roles(&read), [System, User, Assistant, Tool, Assistant, Tool, Assistant]);
        assert_eq!(read[2].joined_text().as_deref(), Some("Checking."), "reasoning is no text");
        assert_eq!(read[2].tool_calls().next().unwrap().arguments, r#"{"city":"Faro"}"#);
        let results: Vec<(bool, &str)> =
            read.iter().flat_map(|m| m.tool_results()).map(|r| (r.is_error, r.content.as_str())).collect();
        assert_eq!(results, [(true, "service down"), (false, r#"{"sky":"clear"}"#)]);
    }

    #[test]
    fn ui_messages_split_an_assistant_message_into_its_steps() {
        let ui = json!([
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Deploy it"}]},
            {"id": "a1", "role": "assistant", "parts": [
                {"type": "step-start"},
                {"type": "text", "text": "Deploying."},
                {"type": "tool-deploy", "toolCallId": "c1", "state": "output-error", "input": {"env": "prod"}, "errorText": "denied"},
                {"type": "step-start"},
                {"type": "dynamic-tool", "toolName": "status", "toolCallId": "c2", "state": "output-available", "input": {}, "output": "down"},
                {"type": "text", "text": "It failed."}
            ]},
            {"id": "a2", "role": "assistant", "parts": [
                {"type": "tool-invocation", "toolInvocation": {"state": "result", "toolCallId": "c3", "toolName": "retry", "args": {}, "result": "ok"}}
            ]}
        ]);
        let read = read(messages(&ui).unwrap()).unwrap();
        use Role::{Assistant, Tool, User};
        assert_eq!(roles(&read), [User, Assistant, Tool, Assistant, Tool, Assistant, Assistant, Tool]);
        let calls: Vec<&str> = read.iter().flat_map(|m| m.tool_calls()).map(|c| c.name.as_str()).collect();
        assert_eq!(calls, ["deploy", "status", "retry"]);
        assert!(read[2].tool_results().next().unwrap().is_error);
        assert_eq!(read[5].joined_text().as_deref(), Some("It failed."));
    }

    #[test]
    fn chat_api_messages_are_not_the_sdks() {
        assert!(messages(&json!([{"role": "user", "content": "hi"}])).is_none());
        let anthropic = json!([{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}]}]);
        assert!(messages(&anthropic).is_none());
    }
}
