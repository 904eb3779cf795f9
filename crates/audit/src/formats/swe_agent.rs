//! SWE-agent `.traj` files: `{"trajectory": [{"thought", "action", "observation", ...}],
//! "history": [{"role", "content", "message_type", "is_demo"?}], "info": {...}}` (SWE-agent's
//! `TrajectoryStep` and `HistoryItem`). Each step becomes one assistant message with one call
//! (tool = the action's first word, arguments `{"command": action}`) and its observation as
//! the result; the task is the first non-demo user message of the history. Demonstrations
//! (`is_demo`) are context the model was sent, kept as one harness message, not as calls.
//! The retry agent's files hold several attempts (`attempts`), each a run.

use looprail::core::message::{Message, ToolCall, ToolResult};
use serde_json::Value;

use super::text_of;

/// True for a document with SWE-agent's `trajectory` list of steps.
pub fn detect(doc: &Value) -> bool {
    doc.get("trajectory").and_then(Value::as_array).is_some_and(|steps| {
        steps.first().is_none_or(|s| s.get("action").is_some() && s.get("observation").is_some())
    }) && doc.get("messages").is_none()
}

/// The attempts of a `.traj` written by SWE-agent's retry agent (`{"attempts": [...]}`, each
/// attempt a trajectory of its own; the chosen one is also copied to the top level), when every
/// attempt is one.
pub fn attempts(doc: &Value) -> Option<&Vec<Value>> {
    doc.get("attempts").and_then(Value::as_array).filter(|a| !a.is_empty() && a.iter().all(detect))
}

/// The run's messages.
pub fn read(doc: &Value) -> Result<Vec<Message>, String> {
    let steps = doc.get("trajectory").and_then(Value::as_array).ok_or("no `trajectory` list")?;
    let mut messages = Vec::with_capacity(steps.len() * 2 + 2);
    let history = doc.get("history").and_then(Value::as_array);
    if let Some(system) =
        history.and_then(|h| h.iter().find(|m| m.get("role").and_then(Value::as_str) == Some("system")))
    {
        messages.push(Message::system(text_of(system.get("content"))));
    }
    // Demonstrations are in the prompt the model is sent (context), but they are no calls of
    // this run's: one harness message holds them all.
    let is_demo = |m: &&Value| m.get("is_demo").and_then(Value::as_bool).unwrap_or(false);
    let demos: Vec<String> =
        history.into_iter().flatten().filter(is_demo).map(|m| text_of(m.get("content"))).collect();
    if !demos.is_empty() {
        messages.push(Message::internal_user(super::HARNESS_META, demos.join("\n")));
    }
    let task = history.and_then(|h| {
        h.iter().find(|m| {
            m.get("role").and_then(Value::as_str) == Some("user")
                && !m.get("is_demo").and_then(Value::as_bool).unwrap_or(false)
        })
    });
    messages.push(Message::user(
        task.map_or_else(|| "(task not recorded)".to_owned(), |t| text_of(t.get("content"))),
    ));
    for (i, step) in steps.iter().enumerate() {
        let field = |key: &str| step.get(key).and_then(Value::as_str).unwrap_or_default();
        let action = field("action").trim();
        let tool = action.split_whitespace().next().unwrap_or("submit");
        let id = format!("swe-{i}");
        let thought = Some(field("thought").to_owned()).filter(|t| !t.trim().is_empty());
        let arguments = serde_json::json!({ "command": action }).to_string();
        messages.push(Message::assistant_with_calls(thought, vec![ToolCall::new(&id, tool, arguments)]));
        messages.push(Message::tool_result(ToolResult::ok(&id, field("observation"))));
    }
    Ok(messages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_become_calls_with_their_observations() {
        let doc = serde_json::json!({
            "history": [
                {"role": "system", "content": "You are SWE-agent.", "message_type": "thought"},
                {"role": "user", "content": "demo task", "is_demo": true, "message_type": "observation"},
                {"role": "user", "content": [{"type": "text", "text": "Fix the parser bug."}], "message_type": "observation"}
            ],
            "trajectory": [
                {"thought": "Look first.", "action": "find_file parser.py", "observation": "Found 1 match", "response": "", "state": {}, "execution_time": 0.1, "query": [], "extra_info": {}},
                {"thought": "", "action": "submit", "observation": "", "response": "", "state": {}, "execution_time": 0.1, "query": [], "extra_info": {}}
            ],
            "info": {"exit_status": "submitted"}
        });
        assert!(detect(&doc));
        let messages = read(&doc).unwrap();
        assert_eq!(messages[1].joined_text().as_deref(), Some("demo task"), "demos are context");
        assert!(messages[1].is_internal(), "and no user turn");
        assert_eq!(messages[2].joined_text().as_deref(), Some("Fix the parser bug."));
        let calls: Vec<&ToolCall> = messages.iter().flat_map(Message::tool_calls).collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].name, "find_file");
        assert_eq!(calls[0].arguments, r#"{"command":"find_file parser.py"}"#);
        assert_eq!(messages[4].tool_results().next().unwrap().content, "Found 1 match");
        assert!(!detect(&serde_json::json!({"messages": []})));
        // The retry agent: each attempt is a trajectory; the chosen one is copied to the top.
        let retried = serde_json::json!({"attempts": [doc.clone(), doc.clone()], "trajectory": doc["trajectory"].clone()});
        assert_eq!(attempts(&retried).map(Vec::len), Some(2));
        assert_eq!(attempts(&doc), None);
        assert_eq!(attempts(&serde_json::json!({"attempts": [{"x": 1}]})), None);
    }
}
