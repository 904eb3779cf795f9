//! OpenHands histories as its agent SDK (`openhands-sdk`, OpenHands V1) writes them: events
//! tagged by `kind`, with uuids for ids. What the model was sent:
//!
//! - `SystemPromptEvent`: `system_prompt` (and `dynamic_context`), the system message;
//! - `MessageEvent`: `llm_message` (`role`, `content`) plus `extended_content`; a user message
//!   from the user is a user turn, one from the environment (the harness nudging the agent) is
//!   context but no turn, an assistant message is the agent's text;
//! - `ActionEvent`: one tool call (`tool_call`: `id`, `name`, `arguments`), its `thought` the
//!   assistant's text; actions of one model response (`llm_response_id`) share one message;
//! - `ObservationEvent` (`observation.content`, `observation.is_error`), `AgentErrorEvent`
//!   (`error`) and `UserRejectObservation` (`rejection_reason`): the result of the call their
//!   `tool_call_id` names;
//! - `Condensation` (`forgotten_event_ids`, `summary`): the context restarts from the summary
//!   and the events not forgotten.
//!
//! Every other kind (state updates, condensation requests, pauses, token records) is the
//! runtime's bookkeeping and is skipped.

use std::collections::HashSet;

use looprail::core::message::{ContentPart, Message, Role, ToolCall, ToolResult};
use serde_json::Value;

use super::openhands_events::{condensed, event_id};
use super::{HARNESS_META, text_of};

/// The kinds of event the model is sent: one of them marks a history as the SDK's.
const SENT: &[&str] = &[
    "SystemPromptEvent",
    "MessageEvent",
    "ActionEvent",
    "ObservationEvent",
    "AgentErrorEvent",
    "UserRejectObservation",
    "Condensation",
];

/// True for an event of the SDK's (tagged by `kind`).
pub fn is_event(event: &Value) -> bool {
    event.get("kind").and_then(Value::as_str).is_some_and(|kind| SENT.contains(&kind))
}

/// The text of a content field plus its `extended_content` (what the agent's context added).
fn with_extension(content: Option<&Value>, event: &Value) -> String {
    let mut text = text_of(content);
    let extension = text_of(event.get("extended_content"));
    if !extension.is_empty() {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&extension);
    }
    text
}

/// The messages of a history of SDK events.
pub fn read(history: &[Value]) -> Result<Vec<Message>, String> {
    let mut messages: Vec<Message> = Vec::with_capacity(history.len());
    // The event each message came from (for condensations), the calls still waiting for their
    // result, and the model response the last assistant message holds calls of.
    let mut sources: Vec<Option<String>> = Vec::with_capacity(history.len());
    let mut open: HashSet<String> = HashSet::new();
    let mut forgotten: HashSet<String> = HashSet::new();
    let mut response: Option<String> = None;
    for event in history {
        let kind = event.get("kind").and_then(Value::as_str).unwrap_or_default();
        let str_field = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or_default();
        match kind {
            "SystemPromptEvent" => {
                let prompt = text_of(event.pointer("/system_prompt/text"));
                let context = text_of(event.pointer("/dynamic_context/text"));
                let text = [prompt, context].into_iter().filter(|t| !t.is_empty()).collect::<Vec<_>>();
                messages.push(Message::system(text.join("\n")));
            }
            "MessageEvent" => {
                let message = event.get("llm_message");
                let text = with_extension(message.and_then(|m| m.get("content")), event);
                let role = message.and_then(|m| m.get("role")).and_then(Value::as_str).unwrap_or("user");
                messages.push(match (role, str_field("source")) {
                    ("assistant", _) => Message::assistant(text),
                    ("system", _) => Message::system(text),
                    (_, "user") => Message::user(text),
                    _ => Message::internal_user(HARNESS_META, text),
                });
            }
            "ActionEvent" => {
                let id = event
                    .pointer("/tool_call/id")
                    .and_then(Value::as_str)
                    .unwrap_or_else(|| str_field("tool_call_id"))
                    .to_owned();
                let name = event
                    .pointer("/tool_call/name")
                    .and_then(Value::as_str)
                    .unwrap_or_else(|| str_field("tool_name"))
                    .to_owned();
                let action = || event.get("action").map_or_else(|| "{}".to_owned(), Value::to_string);
                let arguments =
                    event.pointer("/tool_call/arguments").map_or_else(action, super::arguments_text);
                let call = ToolCall::new(&id, name, arguments);
                open.insert(id);
                let this_response = event.get("llm_response_id").and_then(Value::as_str).map(str::to_owned);
                let same_response = this_response.is_some() && this_response == response;
                match messages.last_mut() {
                    Some(last) if same_response && last.tool_calls().next().is_some() => {
                        last.content.push(ContentPart::ToolUse(call));
                    }
                    _ => {
                        let thought = Some(text_of(event.get("thought"))).filter(|t| !t.trim().is_empty());
                        messages.push(Message::assistant_with_calls(thought, vec![call]));
                    }
                }
                response = this_response;
            }
            "ObservationEvent" | "AgentErrorEvent" | "UserRejectObservation" => {
                let id = str_field("tool_call_id").to_owned();
                if !open.remove(&id) {
                    continue;
                }
                let observation = event.get("observation");
                let is_error = kind == "AgentErrorEvent"
                    || observation.and_then(|o| o.get("is_error")).and_then(Value::as_bool).unwrap_or(false);
                let content = match kind {
                    "AgentErrorEvent" => str_field("error").to_owned(),
                    "UserRejectObservation" => format!("Action rejected: {}", str_field("rejection_reason")),
                    // What the model reads: an error's result opens with OpenHands' own marker.
                    _ if is_error => {
                        format!(
                            "Tool Execution Error. {}",
                            with_extension(observation.and_then(|o| o.get("content")), event)
                        )
                    }
                    _ => with_extension(observation.and_then(|o| o.get("content")), event),
                };
                messages.push(Message::tool_result(if is_error {
                    ToolResult::error(&id, content)
                } else {
                    ToolResult::ok(&id, content)
                }));
            }
            "Condensation" => {
                let ids = event.get("forgotten_event_ids").and_then(Value::as_array).into_iter().flatten();
                forgotten.extend(ids.filter_map(Value::as_str).map(str::to_owned));
                messages.push(condensed(str_field("summary"), &messages, &sources, &forgotten));
            }
            _ => continue,
        }
        if kind != "ActionEvent" {
            response = None;
        }
        sources.resize(messages.len(), event_id(event));
    }
    if messages.iter().all(|m| m.role != Role::User) {
        return Err("an OpenHands history without the user's task".into());
    }
    Ok(messages)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run as the SDK serialises it (fields as in `openhands-sdk`'s event models).
    fn history() -> Vec<Value> {
        let action = |id: &str, call: &str, response: &str, command: &str| {
            serde_json::json!({
                "kind": "ActionEvent", "id": id, "source": "agent", "timestamp": "2026-01-01T00:00:00",
                "thought": [{"type": "text", "text": format!("Run {command}.")}],
                "action": {"kind": "TerminalAction", "command": command},
                "tool_name": "terminal", "tool_call_id": call,
                "tool_call": {"id": call, "name": "terminal", "arguments": format!("{{\"command\": \"{command}\"}}"), "origin": "completion"},
                "llm_response_id": response, "security_risk": "LOW"
            })
        };
        let observation = |id: &str, call: &str, text: &str, is_error: bool| {
            serde_json::json!({
                "kind": "ObservationEvent", "id": id, "source": "environment", "tool_name": "terminal",
                "tool_call_id": call, "action_id": "a",
                "observation": {"kind": "TerminalObservation", "content": [{"type": "text", "text": text}], "is_error": is_error, "exit_code": 0}
            })
        };
        vec![
            serde_json::json!({"kind": "SystemPromptEvent", "id": "e0", "source": "agent", "system_prompt": {"type": "text", "text": "You are OpenHands."}, "tools": []}),
            serde_json::json!({"kind": "MessageEvent", "id": "e1", "source": "user", "llm_message": {"role": "user", "content": [{"type": "text", "text": "Fix the bug."}]}}),
            serde_json::json!({"kind": "ConversationStateUpdateEvent", "id": "e2", "source": "environment", "key": "execution_status", "value": "running"}),
            action("e3", "call_1", "resp_1", "ls"),
            action("e4", "call_2", "resp_1", "git status"),
            observation("e5", "call_1", "a.py", false),
            observation("e6", "call_2", "fatal: not a git repository", true),
            serde_json::json!({"kind": "MessageEvent", "id": "e7", "source": "environment", "llm_message": {"role": "user", "content": [{"type": "text", "text": "Please continue."}]}}),
            action("e8", "call_3", "resp_2", "pytest"),
            serde_json::json!({"kind": "AgentErrorEvent", "id": "e9", "source": "agent", "tool_name": "terminal", "tool_call_id": "call_3", "error": "Timed out"}),
            serde_json::json!({"kind": "Condensation", "id": "e10", "source": "environment", "forgotten_event_ids": ["e3", "e4", "e5", "e6"], "summary": "Listed files; no git.", "llm_response_id": "resp_3"}),
            serde_json::json!({"kind": "MessageEvent", "id": "e11", "source": "agent", "llm_message": {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}}),
        ]
    }

    #[test]
    fn sdk_events_become_messages_calls_and_results() {
        let history = history();
        assert!(history.iter().any(is_event));
        let messages = read(&history).unwrap();
        let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
        use Role::{Assistant, System, Tool, User};
        assert_eq!(roles, [System, User, Assistant, Tool, Tool, User, Assistant, Tool, User, Assistant]);
        // Actions of one model response are one message with two calls.
        let calls: Vec<&ToolCall> = messages[2].tool_calls().collect();
        assert_eq!(calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["call_1", "call_2"]);
        assert_eq!(calls[1].arguments, r#"{"command": "git status"}"#);
        assert_eq!(messages[2].joined_text().as_deref(), Some("Run ls."));
        let result = |i: usize| messages[i].tool_results().next().unwrap().clone();
        assert!(!result(3).is_error);
        assert!(result(4).is_error);
        assert_eq!(result(4).content, "Tool Execution Error. fatal: not a git repository");
        // The environment's nudge is context, not the person's turn.
        assert!(messages[5].is_internal());
        assert!(result(7).is_error, "an agent error answers its call");
        // The condensation keeps the summary and what was not forgotten: the nudge and the
        // last call with its error, not the first response's calls.
        assert!(messages[8].is_history_summary());
        let summary = messages[8].joined_text().unwrap();
        assert!(summary.starts_with("Listed files; no git."), "{summary}");
        assert!(summary.contains("Please continue.") && summary.contains("Timed out"), "{summary}");
        assert!(!summary.contains("a.py"), "{summary}");
    }

    #[test]
    fn results_without_their_call_and_histories_without_a_task_are_refused() {
        let orphan = serde_json::json!({"kind": "ObservationEvent", "tool_call_id": "nope", "observation": {"content": "x"}});
        let user = serde_json::json!({"kind": "MessageEvent", "source": "user", "llm_message": {"role": "user", "content": "Go."}});
        assert_eq!(read(&[user, orphan]).unwrap().len(), 1, "a result no call asked for is dropped");
        let system = serde_json::json!({"kind": "SystemPromptEvent", "system_prompt": {"text": "s"}});
        assert!(read(&[system]).is_err());
        assert!(!is_event(&serde_json::json!({"kind": "PauseEvent"})));
    }
}
