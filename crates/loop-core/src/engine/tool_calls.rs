//! Checks on tool calls before they run, and on tool output before the model sees it.

use crate::message::{ToolCall, ToolResult};
use crate::tool::ToolDefinition;

/// Flag on a result for a call to a tool that is not registered.
pub const FLAG_UNKNOWN_TOOL: &str = "unknown-tool";
/// Flag on a result for a call whose arguments are not a JSON object.
pub const FLAG_INVALID_ARGUMENTS: &str = "invalid-arguments";
/// Flag on a result for a call that never ran because the run stopped first.
pub const FLAG_NOT_EXECUTED: &str = "not-executed";

/// Parses a call's arguments: an empty text counts as `{}`; anything but a JSON object is an
/// error message meant for the model.
pub fn parse_arguments(call: &ToolCall) -> Result<serde_json::Value, String> {
    let text = call.arguments.trim();
    if text.is_empty() {
        return Ok(serde_json::Value::Object(serde_json::Map::new()));
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value @ serde_json::Value::Object(_)) => Ok(value),
        Ok(_) => Err(format!(
            "Error: the arguments of `{}` must be a JSON object. Call it again with an object.",
            call.name
        )),
        Err(err) => Err(format!(
            "Error: the arguments of `{}` are not valid JSON ({err}). Call it again with a JSON object.",
            call.name
        )),
    }
}

/// `Ok` for a call the engine may dispatch; otherwise the error result the model will see.
pub fn validate_call(call: &ToolCall, tools: &[ToolDefinition]) -> Result<(), ToolResult> {
    if !tools.iter().any(|t| t.name == call.name) {
        let known: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        let message = format!(
            "Error: there is no tool named `{}`. Available tools: {}.",
            call.name,
            if known.is_empty() { "none".to_owned() } else { known.join(", ") }
        );
        return Err(ToolResult::error(&call.id, message).with_flag(FLAG_UNKNOWN_TOOL));
    }
    parse_arguments(call)
        .map(drop)
        .map_err(|message| ToolResult::error(&call.id, message).with_flag(FLAG_INVALID_ARGUMENTS))
}

/// Cuts `content` to at most `max_bytes` (on a character boundary) and says how much was cut.
pub fn truncate_output(content: &mut String, max_bytes: usize) {
    if content.len() <= max_bytes {
        return;
    }
    let original = content.len();
    let mut cut = max_bytes;
    while !content.is_char_boundary(cut) {
        cut -= 1;
    }
    content.truncate(cut);
    content.push_str(&format!(
        "\n[output truncated: showing {cut} of {original} bytes; ask for a narrower result]"
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defs() -> Vec<ToolDefinition> {
        vec![ToolDefinition::new("read", "", serde_json::json!({"type": "object"}))]
    }

    #[test]
    fn unknown_tools_and_bad_json_become_flagged_error_results() {
        let unknown = validate_call(&ToolCall::new("1", "rm", "{}"), &defs()).unwrap_err();
        assert_eq!(unknown.flag.as_deref(), Some(FLAG_UNKNOWN_TOOL));
        assert!(unknown.content.contains("Available tools: read"));
        let bad = validate_call(&ToolCall::new("2", "read", "{\"path\": "), &defs()).unwrap_err();
        assert_eq!(bad.flag.as_deref(), Some(FLAG_INVALID_ARGUMENTS));
        assert!(bad.is_error);
        let array = validate_call(&ToolCall::new("3", "read", "[1]"), &defs()).unwrap_err();
        assert_eq!(array.flag.as_deref(), Some(FLAG_INVALID_ARGUMENTS));
        assert!(validate_call(&ToolCall::new("4", "read", "  "), &defs()).is_ok());
    }

    #[test]
    fn truncation_respects_char_boundaries_and_reports_sizes() {
        let mut text = "é".repeat(300); // 600 bytes
        truncate_output(&mut text, 301);
        assert!(text.starts_with(&"é".repeat(150)));
        assert!(text.contains("showing 300 of 600 bytes"));
        let mut short = "ok".to_owned();
        truncate_output(&mut short, 301);
        assert_eq!(short, "ok");
    }
}
