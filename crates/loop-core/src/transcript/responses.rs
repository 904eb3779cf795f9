//! OpenAI Responses API items read into [`Message`]s: a request's `input`, a response's
//! `output`, and the same items as Codex rollouts and the OpenAI Agents SDK's input lists keep
//! them. One reader, so the gateway's live guards and the audit's replay of a recorded run see
//! the same conversation.
//!
//! An item is a `message` (`role` user, system, developer or assistant; `content` a string or
//! a list of parts with `text`), a call (`function_call` with its `arguments`,
//! `custom_tool_call` with its free-form `input`, `local_shell_call` with its `action`) or a
//! call's output (`function_call_output`, `custom_tool_call_output`,
//! `local_shell_call_output`, by `call_id`). Reasoning, references, hosted tools' calls and the
//! like carry nothing a guard reads and become no message. The calls of one reply are items of
//! their own; [`push_item`] makes them one assistant turn again.
//!
//! ```
//! use looprail_loop_core::message::Role;
//! use looprail_loop_core::transcript::responses::from_items;
//!
//! let input = serde_json::json!([
//!     {"role": "user", "content": "List the files."},
//!     {"type": "reasoning", "id": "rs_1", "summary": []},
//!     {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Listing."}]},
//!     {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
//!     {"type": "function_call_output", "call_id": "c1", "output": "a.txt"}
//! ]);
//! let messages = from_items(input.as_array().unwrap()).unwrap();
//! let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
//! assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool]);
//! assert_eq!(messages[1].joined_text().as_deref(), Some("Listing."));
//! assert_eq!(messages[1].tool_calls().next().unwrap().name, "ls");
//! ```

use serde_json::Value;

use super::TranscriptError;
use crate::message::{Message, ToolCall, ToolResult};

/// The text of an item's `content` or of an output: a string, the `text` of each part of a
/// list (joined by line breaks), or an object's `content` (the `{content, success}` outputs of
/// Codex's first rollouts).
pub fn item_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => {
            parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
        }
        Some(Value::Object(object)) => {
            object.get("content").and_then(Value::as_str).unwrap_or_default().to_owned()
        }
        _ => String::new(),
    }
}

/// One item as messages: one for a message, a call or an output, none for an item no guard
/// reads. The error names what is wrong (a message of an unknown role).
pub fn item_messages(item: &Value) -> Result<Vec<Message>, String> {
    let field = |key: &str| item.get(key).and_then(Value::as_str);
    let kind = field("type").unwrap_or(if item.get("role").is_some() { "message" } else { "" });
    let call_id = || field("call_id").or_else(|| field("id")).unwrap_or_default();
    let call = |name: &str, arguments: String| {
        vec![Message::assistant_with_calls(None, vec![ToolCall::new(call_id(), name, arguments)])]
    };
    Ok(match kind {
        "message" => {
            let text = item_text(item.get("content"));
            // A logged message without a role is the user's (the API itself requires one).
            vec![match field("role").unwrap_or("user") {
                "system" | "developer" => Message::system(text),
                "user" => Message::user(text),
                "assistant" => Message::assistant(text),
                other => return Err(format!("unknown role {other:?}")),
            }]
        }
        "function_call" => call(field("name").unwrap_or("function"), arguments_text(item.get("arguments"))),
        // A custom tool's call is free text (a patch, a script): its arguments are that text.
        "custom_tool_call" => call(field("name").unwrap_or("tool"), arguments_text(item.get("input"))),
        "local_shell_call" => call("local_shell", arguments_text(item.get("action"))),
        "function_call_output" | "custom_tool_call_output" | "local_shell_call_output" => {
            vec![Message::tool_result(ToolResult::ok(call_id(), item_text(item.get("output"))))]
        }
        _ => Vec::new(),
    })
}

/// A call's arguments as text: a string as it is, any other value as its JSON, none as `{}`.
fn arguments_text(arguments: Option<&Value>) -> String {
    match arguments {
        Some(Value::String(text)) => text.clone(),
        None | Some(Value::Null) => "{}".to_owned(),
        Some(other) => other.to_string(),
    }
}

/// Adds one item's messages to `out`: a call with no text of its own joins the assistant
/// message before it when no output came between (the calls of one reply are items of their
/// own, after the reply's text).
pub fn push_item(out: &mut Vec<Message>, next: Vec<Message>) {
    for message in next {
        let only_calls =
            message.joined_text().is_none_or(|t| t.is_empty()) && message.tool_calls().next().is_some();
        match out.last_mut() {
            Some(last) if only_calls && last.role == message.role && last.tool_results().next().is_none() => {
                last.content.extend(message.content);
            }
            _ => out.push(message),
        }
    }
}

/// A list of items as a conversation.
pub fn from_items(items: &[Value]) -> Result<Vec<Message>, TranscriptError> {
    let mut out = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let next = item_messages(item).map_err(|reason| TranscriptError { index, reason })?;
        push_item(&mut out, next);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Role;
    use serde_json::json;

    #[test]
    fn every_kind_of_call_and_output_is_read_and_a_replys_calls_are_one_turn() {
        let items = json!([
            {"type": "message", "role": "developer", "content": "Be brief."},
            {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
            {"type": "function_call", "call_id": "c2", "name": "cat", "arguments": {"p": "a"}},
            {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "a"}]},
            {"type": "function_call_output", "call_id": "c2", "output": {"content": "text", "success": true}},
            {"type": "custom_tool_call", "call_id": "c3", "name": "apply_patch", "input": "*** Begin Patch"},
            {"type": "custom_tool_call_output", "call_id": "c3", "output": "Done"},
            {"type": "local_shell_call", "id": "c4", "action": {"type": "exec", "command": ["ls"]}},
            {"type": "local_shell_call_output", "call_id": "c4", "output": "a"},
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
            {"content": "neither type nor role"},
            {"type": "message", "content": "no role"}
        ]);
        let messages = from_items(items.as_array().unwrap()).unwrap();
        let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
        use Role::{Assistant, System, Tool, User};
        assert_eq!(roles, [System, Assistant, Tool, Tool, Assistant, Tool, Assistant, Tool, User]);
        let calls: Vec<(&str, &str, &str)> = messages
            .iter()
            .flat_map(|m| m.tool_calls())
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(
            calls,
            [
                ("c1", "ls", "{}"),
                ("c2", "cat", r#"{"p":"a"}"#),
                ("c3", "apply_patch", "*** Begin Patch"),
                ("c4", "local_shell", r#"{"command":["ls"],"type":"exec"}"#)
            ]
        );
        let outputs: Vec<&str> =
            messages.iter().flat_map(|m| m.tool_results()).map(|r| r.content.as_str()).collect();
        assert_eq!(outputs, ["a", "text", "Done", "a"]);
    }

    #[test]
    fn a_message_of_an_unknown_role_is_an_error_naming_the_item() {
        let items = json!([{"role": "user", "content": "hi"}, {"role": "wizard", "content": "x"}]);
        let error = from_items(items.as_array().unwrap()).unwrap_err();
        assert_eq!(error.index, 1);
        assert!(error.reason.contains("wizard"), "{error}");
    }
}
