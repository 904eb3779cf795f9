//! mini-swe-agent trajectories (`*.traj.json`): `{"info": {...}, "messages": [...],
//! "trajectory_format": "mini-swe-agent-1"...}`, the messages it sent and received. In its
//! text mode an assistant message holds its one bash action in a ```` ```bash ```` block (also
//! kept under `extra.actions`), and the next user message is that action's observation
//! (`<returncode>N</returncode>` or `Exit code: N`, then the output); with tool calling the
//! actions are `tool_calls` answered by `tool` messages. The final `exit` message is the
//! harness's status, never sent to the model.
//!
//! Each action is a `bash` call (arguments `{"command": ...}`); an observation whose return code
//! is not 0 is an error result. The first user message is the task; later user messages that
//! answer no action (format errors, step warnings) are harness text: context, not user turns.

use looprail::core::message::{Message, Role, ToolCall, ToolResult};
use serde_json::Value;

use super::{HARNESS_META, text_of};

/// True for a document naming mini-swe-agent's trajectory format.
pub fn detect(doc: &Value) -> bool {
    doc.get("trajectory_format").and_then(Value::as_str).is_some_and(|f| f.starts_with("mini-swe-agent"))
        && doc.get("messages").is_some_and(Value::is_array)
}

/// The commands of a text-mode assistant message: its `extra.actions` when recorded (strings,
/// or objects with a `command`), else its ```` ```bash ```` blocks, as mini-swe-agent's own
/// pattern finds them.
fn actions(message: &Value, text: &str) -> Vec<String> {
    if let Some(recorded) = message.pointer("/extra/actions").and_then(Value::as_array) {
        return recorded
            .iter()
            .filter_map(|a| a.as_str().or_else(|| a.get("command").and_then(Value::as_str)))
            .map(str::to_owned)
            .collect();
    }
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("```bash") {
        let after = &rest[open + "```bash".len()..];
        // Spaces may follow the fence's name; the command starts on the next line.
        let Some(line_end) = after.find('\n').filter(|n| after[..*n].trim().is_empty()) else {
            rest = after;
            continue;
        };
        let body = &after[line_end + 1..];
        let Some(close) = body.find("\n```") else { break };
        found.push(body[..close].to_owned());
        rest = &body[close + 4..];
    }
    found
}

/// The return code an observation opens with, if it states one.
fn return_code(observation: &str) -> Option<i64> {
    let text = observation.trim_start();
    let code = if let Some(rest) = text.strip_prefix("<returncode>") {
        &rest[..rest.find("</returncode>")?]
    } else {
        let rest = text.strip_prefix("Exit code:")?;
        &rest[..rest.find('\n').unwrap_or(rest.len())]
    };
    code.trim().parse().ok()
}

/// A result for `call_id`: an error when the observation states a return code other than 0.
fn result(call_id: &str, observation: String) -> Message {
    let failed = return_code(&observation).is_some_and(|code| code != 0);
    Message::tool_result(if failed {
        ToolResult::error(call_id, observation)
    } else {
        ToolResult::ok(call_id, observation)
    })
}

/// The run's messages.
pub fn read(doc: &Value) -> Result<Vec<Message>, String> {
    let recorded = doc.get("messages").and_then(Value::as_array).ok_or("no `messages` list")?;
    let mut messages = Vec::with_capacity(recorded.len());
    // Calls waiting for their observation.
    let mut pending: Vec<String> = Vec::new();
    for (index, message) in recorded.iter().enumerate() {
        let text = text_of(message.get("content"));
        match message.get("role").and_then(Value::as_str).unwrap_or_default() {
            "system" => messages.push(Message::system(text)),
            "assistant" => {
                let calls: Vec<ToolCall> = match message.get("tool_calls").and_then(Value::as_array) {
                    Some(calls) => calls
                        .iter()
                        .enumerate()
                        .map(|(k, call)| {
                            let id = call
                                .get("id")
                                .and_then(Value::as_str)
                                .map_or_else(|| format!("mini-{index}-{k}"), str::to_owned);
                            let name =
                                call.pointer("/function/name").and_then(Value::as_str).unwrap_or("bash");
                            let arguments = call
                                .pointer("/function/arguments")
                                .map_or_else(|| "{}".to_owned(), super::arguments_text);
                            ToolCall::new(id, name, arguments)
                        })
                        .collect(),
                    None => actions(message, &text)
                        .into_iter()
                        .enumerate()
                        .map(|(k, command)| {
                            let arguments = serde_json::json!({ "command": command }).to_string();
                            ToolCall::new(format!("mini-{index}-{k}"), "bash", arguments)
                        })
                        .collect(),
                };
                pending = calls.iter().map(|c| c.id.clone()).collect();
                messages.push(super::assistant_turn(text, calls));
            }
            "tool" => {
                let id = message.get("tool_call_id").and_then(Value::as_str).unwrap_or_default();
                if let Some(at) = pending.iter().position(|p| p == id) {
                    pending.remove(at);
                    messages.push(result(id, text));
                }
            }
            "user" if !pending.is_empty() => {
                // Text mode: one observation answers the step's action (the calls after the
                // first, if a step ever had more, get it too: their outputs come joined).
                for id in std::mem::take(&mut pending) {
                    messages.push(result(&id, text.clone()));
                }
            }
            "user" if messages.iter().all(|m| m.role != Role::User) => messages.push(Message::user(text)),
            "user" => messages.push(Message::internal_user(HARNESS_META, text)),
            // `exit` (the run's status) and anything unknown were never sent to the model.
            _ => {}
        }
    }
    if messages.iter().all(|m| m.role != Role::User || m.is_internal()) {
        return Err("a mini-swe-agent trajectory without the task".into());
    }
    Ok(messages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_mode_steps_become_bash_calls_with_their_observations() {
        let doc = serde_json::json!({
            "info": {"exit_status": "Submitted"},
            "trajectory_format": "mini-swe-agent-1.1",
            "messages": [
                {"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "<pr_description>Fix it</pr_description>"},
                {"role": "assistant", "content": "THOUGHT: look\n\n```bash\nls -la\n```"},
                {"role": "user", "content": "<returncode>0</returncode>\n<output>\na.py\n</output>"},
                {"role": "assistant", "content": "THOUGHT: two blocks is a format error\n```bash\nls\n``` ```bash\npwd\n```", "extra": {"actions": []}},
                {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks."},
                {"role": "assistant", "content": "```bash\npython -m pytest\n```", "extra": {"actions": ["python -m pytest"]}},
                {"role": "user", "content": "Exit code: 1\nOutput:\nE   NameError"},
                {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}}
            ]
        });
        assert!(detect(&doc));
        let messages = read(&doc).unwrap();
        let calls: Vec<&ToolCall> = messages.iter().flat_map(Message::tool_calls).collect();
        assert_eq!(calls.len(), 2, "the step with no single action made no call");
        assert_eq!(
            (calls[0].name.as_str(), calls[0].arguments.as_str()),
            ("bash", r#"{"command":"ls -la"}"#)
        );
        let results: Vec<&ToolResult> = messages.iter().flat_map(Message::tool_results).collect();
        assert_eq!(results.iter().map(|r| r.is_error).collect::<Vec<_>>(), [false, true]);
        assert!(messages[5].is_internal(), "the format error is the harness's, no user turn");
        assert_eq!(messages.len(), 8, "exit was never sent");
        assert!(!detect(&serde_json::json!({"messages": []})));
    }

    #[test]
    fn blocks_are_found_as_mini_swe_agent_finds_them() {
        assert_eq!(actions(&Value::Null, "a\n```bash\ncd x && make\n```\nb"), ["cd x && make"]);
        assert_eq!(actions(&Value::Null, "```bash  \nls\n```"), ["ls"]);
        assert!(actions(&Value::Null, "```bash ls```").is_empty());
        assert!(actions(&Value::Null, "```bash\nnever closed").is_empty());
        assert_eq!(return_code("<returncode>127</returncode>\n<output>"), Some(127));
        assert_eq!(return_code("Exit code: 0\nOutput:"), Some(0));
        assert_eq!(return_code("The last command timed out"), None);
    }

    #[test]
    fn tool_calling_mode_reads_calls_and_tool_messages() {
        let doc = serde_json::json!({
            "trajectory_format": "mini-swe-agent-1.1",
            "messages": [
                {"role": "user", "content": "Fix it"},
                {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "<returncode>2</returncode>\n<output>ls: no</output>"},
                {"role": "exit", "content": "done"}
            ]
        });
        let messages = read(&doc).unwrap();
        assert_eq!(messages.len(), 3);
        assert!(messages[2].tool_results().next().unwrap().is_error);
        let only_exit = serde_json::json!({"trajectory_format": "mini-swe-agent-1", "messages": [{"role": "exit", "content": ""}]});
        assert!(read(&only_exit).is_err());
    }
}
