//! Logs in the Gemini API's own shape: `contents`, a list of `{"role": "user" | "model",
//! "parts": [...]}` (bare, or as a request's `{"contents", "systemInstruction"?}`). A part is
//! `{"text"}`, `{"functionCall": {"name", "args", "id"?}}` or `{"functionResponse": {"name",
//! "response", "id"?}}`; a response answers the call with its id, else the oldest open call of
//! its name.

use looprail::core::message::{Message, ToolCall, ToolResult};
use serde_json::Value;

use super::text_of;

/// The `contents` of a document in the Gemini API's shape, with its system instruction.
pub fn contents(doc: &Value) -> Option<(&[Value], Option<&Value>)> {
    let (contents, system) = match doc {
        Value::Array(contents) => (contents.as_slice(), None),
        Value::Object(_) => (doc.get("contents")?.as_array()?.as_slice(), doc.get("systemInstruction")),
        _ => return None,
    };
    let is_content = |c: &Value| {
        matches!(c.get("role").and_then(Value::as_str), Some("user" | "model"))
            && c.get("parts").is_some_and(Value::is_array)
    };
    (!contents.is_empty() && contents.iter().all(is_content)).then_some((contents, system))
}

/// The conversation of `contents`.
pub fn read(contents: &[Value], system: Option<&Value>) -> Vec<Message> {
    let mut messages = Vec::with_capacity(contents.len() + 1);
    if let Some(system) = system {
        messages.push(Message::system(text_of(system.get("parts"))));
    }
    // Calls not answered yet: (id, name).
    let mut open: Vec<(String, String)> = Vec::new();
    for (index, content) in contents.iter().enumerate() {
        let parts = content.get("parts").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let text = text_of(content.get("parts"));
        if content.get("role").and_then(Value::as_str) == Some("model") {
            let calls: Vec<ToolCall> = parts
                .iter()
                .enumerate()
                .filter_map(|(k, part)| {
                    let call = part.get("functionCall")?;
                    let name = call.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
                    let id = call
                        .get("id")
                        .and_then(Value::as_str)
                        .map_or_else(|| format!("gemini-{index}-{k}"), str::to_owned);
                    open.push((id.clone(), name.clone()));
                    let arguments = call.get("args").map_or_else(|| "{}".to_owned(), Value::to_string);
                    Some(ToolCall::new(id, name, arguments))
                })
                .collect();
            messages.push(super::assistant_turn(text, calls));
            continue;
        }
        for response in parts.iter().filter_map(|p| p.get("functionResponse")) {
            let name = response.get("name").and_then(Value::as_str).unwrap_or_default();
            let by_id = response
                .get("id")
                .and_then(Value::as_str)
                .and_then(|id| open.iter().position(|(o, _)| o == id));
            let Some(at) = by_id.or_else(|| open.iter().position(|(_, n)| n == name)) else { continue };
            let (id, _) = open.remove(at);
            let body = response.get("response");
            let failed = body.is_some_and(|b| b.get("error").is_some());
            let output = match body
                .and_then(|b| b.get("output").or_else(|| b.get("error")).or_else(|| b.get("result")))
            {
                Some(Value::String(text)) => text.clone(),
                _ => body.map(Value::to_string).unwrap_or_default(),
            };
            messages.push(Message::tool_result(if failed {
                ToolResult::error(id, output)
            } else {
                ToolResult::ok(id, output)
            }));
        }
        if !text.trim().is_empty() {
            messages.push(Message::user(text));
        }
    }
    messages
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contents_become_calls_answered_by_id_or_by_name() {
        let doc = serde_json::json!({
            "systemInstruction": {"parts": [{"text": "You fix builds."}]},
            "contents": [
                {"role": "user", "parts": [{"text": "Fix it"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "run", "args": {"cmd": "make"}}}, {"functionCall": {"id": "c2", "name": "read", "args": {"path": "a"}}}]},
                {"role": "user", "parts": [{"functionResponse": {"id": "c2", "name": "read", "response": {"output": "text"}}}, {"functionResponse": {"name": "run", "response": {"error": "exit 2"}}}]},
                {"role": "model", "parts": [{"text": "Fixed."}]}
            ]
        });
        let (contents, system) = contents(&doc).unwrap();
        let messages = read(contents, system);
        assert_eq!(messages[0].joined_text().as_deref(), Some("You fix builds."));
        let results: Vec<&ToolResult> = messages.iter().flat_map(Message::tool_results).collect();
        let answered: Vec<(&str, bool)> = results.iter().map(|r| (r.call_id.as_str(), r.is_error)).collect();
        assert_eq!(answered, [("c2", false), ("gemini-1-0", true)]);
        assert!(super::contents(&serde_json::json!([{"role": "assistant", "content": "x"}])).is_none());
    }
}
