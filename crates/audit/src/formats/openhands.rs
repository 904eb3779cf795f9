//! OpenHands event histories: an evaluation `output.jsonl` holds one run per line,
//! `{"instance_id", "history": [event, ...], ...}`; a single run may also be a document with
//! `history`. Events are OpenHands' serialized form: actions `{"id", "source", "action",
//! "args", "message", "tool_call_metadata"?}` and observations `{"id", "source", "observation",
//! "content", "extras", "cause"}` (the id of the action they answer). Older outputs hold
//! `[action, observation]` pairs instead; they are read as the events they pair.
//!
//! A user `message` is a user turn, an agent `message` assistant text, `system` the system
//! prompt; every other agent action (`run`, `edit`, `read`, `run_ipython`, `browse`, `think`,
//! `finish`, ...) is one tool call — named by its function call when the event records one,
//! by the action otherwise, with `args` as arguments (`thought` becomes the assistant's text) —
//! and the observation caused by it is its result. State changes, recalls and null events are
//! bookkeeping and are skipped. A `condensation` (the condenser made the agent forget events)
//! restarts the measured context with its summary and what was not forgotten.
//!
//! Histories of the agent SDK's events (OpenHands V1, tagged by `kind`) are read by
//! [`openhands_sdk`].

use std::borrow::Cow;
use std::collections::HashSet;

use looprail::core::message::{Message, Role, ToolCall, ToolResult};
use serde_json::{Map, Value};

use super::openhands_events::{condensed, event_id};
use super::openhands_sdk;

/// Actions and observations that are the runtime's bookkeeping, not the agent's work.
const SKIPPED: &[&str] =
    &["change_agent_state", "agent_state_changed", "recall", "null", "condensation_request"];
/// Argument keys that describe how an action ran, not what it asked.
const NOISE: &[&str] =
    &["thought", "blocking", "hidden", "confirmation_state", "security_risk", "is_input", "impl_source"];

/// True for a run object with an OpenHands `history` of events (or of the older
/// `[action, observation]` pairs).
pub fn detect(run: &Value) -> bool {
    let is_event =
        |e: &Value| e.get("action").is_some() || e.get("observation").is_some() || openhands_sdk::is_event(e);
    run.get("history").and_then(Value::as_array).is_some_and(|h| {
        h.iter()
            .take(5)
            .any(|e| is_event(e) || e.as_array().is_some_and(|pair| pair.first().is_some_and(is_event)))
    })
}

/// The events of a history: OpenHands' event list as it is, or its older form (evaluation
/// outputs of 2024) flattened: `[action, observation]` pairs whose observation answers the
/// action beside it (its `cause` is set to the action's id when it names none; actions without
/// an id get one no real event has).
fn events(history: &[Value]) -> Cow<'_, [Value]> {
    if !history.iter().any(Value::is_array) {
        return Cow::Borrowed(history);
    }
    let mut events = Vec::with_capacity(history.len() * 2);
    for (index, entry) in history.iter().enumerate() {
        let Some([action, observation]) = entry.as_array().map(Vec::as_slice) else {
            events.push(entry.clone());
            continue;
        };
        let id = action.get("id").and_then(Value::as_i64).unwrap_or(-1 - index as i64);
        let (mut action, mut observation) = (action.clone(), observation.clone());
        if let Some(action) = action.as_object_mut() {
            action.insert("id".to_owned(), id.into());
        }
        if let Some(observation) = observation.as_object_mut() {
            observation.entry("cause").or_insert(id.into());
        }
        events.extend([action, observation]);
    }
    Cow::Owned(events)
}

/// The run's id (for a `path#id` name): `instance_id`, else `id`.
pub fn run_id(run: &Value) -> Option<String> {
    run.get("instance_id").or_else(|| run.get("id")).map(|v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// The events a legacy `condensation` action makes the agent forget: by id, or by an id range.
fn forgotten_by(args: &Map<String, Value>, forgotten: &mut HashSet<String>) {
    let ids = args.get("forgotten_event_ids").and_then(Value::as_array).into_iter().flatten();
    forgotten.extend(ids.filter_map(Value::as_i64).map(|id| id.to_string()));
    let bound = |key: &str| args.get(key).and_then(Value::as_i64);
    if let (Some(first), Some(last)) = (bound("forgotten_events_start_id"), bound("forgotten_events_end_id"))
    {
        forgotten.extend((first..=last).map(|id| id.to_string()));
    }
}

/// The run's messages.
pub fn read(run: &Value) -> Result<Vec<Message>, String> {
    let history = run.get("history").and_then(Value::as_array).ok_or("no `history` list")?;
    if history.iter().any(openhands_sdk::is_event) {
        return openhands_sdk::read(history);
    }
    let events = events(history);
    let mut messages = Vec::with_capacity(events.len());
    // Calls whose result has not come yet, by the event id that caused them.
    let mut open: Vec<(i64, String)> = Vec::new();
    // The event each message came from, and the events a condenser made the agent forget.
    let mut sources: Vec<Option<String>> = Vec::with_capacity(events.len());
    let mut previous = None;
    let mut forgotten: HashSet<String> = HashSet::new();
    for event in events.iter() {
        sources.resize(messages.len(), previous);
        previous = event_id(event);
        let source = event.get("source").and_then(Value::as_str).unwrap_or_default();
        if let Some(action) = event.get("action").and_then(Value::as_str) {
            if SKIPPED.contains(&action) {
                continue;
            }
            let args = event.get("args").and_then(Value::as_object).cloned().unwrap_or_default();
            if action == "condensation" {
                forgotten_by(&args, &mut forgotten);
                let summary = args.get("summary").and_then(Value::as_str).unwrap_or_default();
                messages.push(condensed(summary, &messages, &sources, &forgotten));
                continue;
            }
            let text = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
            match (action, source) {
                ("system", _) => messages.push(Message::system(text("content"))),
                ("message", "user") => messages.push(Message::user(text("content"))),
                ("message", _) => messages.push(Message::assistant(text("content"))),
                _ => {
                    let id = event.get("id").and_then(Value::as_i64).unwrap_or(messages.len() as i64);
                    let call_id = format!("oh-{id}");
                    let name = event
                        .pointer("/tool_call_metadata/function_name")
                        .and_then(Value::as_str)
                        .unwrap_or(action)
                        .to_owned();
                    let arguments: Map<String, Value> = args
                        .iter()
                        .filter(|(k, _)| !NOISE.contains(&k.as_str()))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    let thought = Some(text("thought")).filter(|t| !t.trim().is_empty());
                    let call = ToolCall::new(&call_id, name, Value::Object(arguments).to_string());
                    messages.push(Message::assistant_with_calls(thought, vec![call]));
                    open.push((id, call_id));
                }
            }
        } else if let Some(observation) = event.get("observation").and_then(Value::as_str) {
            if SKIPPED.contains(&observation) {
                continue;
            }
            let cause = event.get("cause").and_then(Value::as_i64);
            let Some(position) = open.iter().position(|(id, _)| Some(*id) == cause) else { continue };
            let (_, call_id) = open.remove(position);
            let content = event.get("content").and_then(Value::as_str).unwrap_or_default();
            let result = if observation == "error" {
                ToolResult::error(&call_id, content)
            } else {
                ToolResult::ok(&call_id, content)
            };
            messages.push(Message::tool_result(result));
        }
    }
    if messages.iter().all(|m| m.role != Role::User) {
        return Err("an OpenHands history without the user's task".into());
    }
    Ok(messages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_become_messages_calls_and_results() {
        let run = serde_json::json!({
            "instance_id": "django__django-1",
            "history": [
                {"id": 0, "source": "agent", "action": "system", "args": {"content": "You are OpenHands."}, "message": ""},
                {"id": 1, "source": "user", "action": "message", "args": {"content": "Fix the bug."}, "message": "Fix the bug."},
                {"id": 2, "source": "environment", "observation": "agent_state_changed", "content": "", "extras": {"agent_state": "running"}},
                {"id": 3, "source": "agent", "action": "run", "args": {"command": "pytest -x", "thought": "Run the tests.", "blocking": false}, "message": "Running", "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "toolu_1"}},
                {"id": 4, "source": "agent", "observation": "run", "content": "1 failed", "extras": {"exit_code": 1}, "cause": 3},
                {"id": 5, "source": "agent", "action": "edit", "args": {"path": "/a.py", "new_str": "x"}, "message": ""},
                {"id": 6, "source": "agent", "observation": "error", "content": "File not found", "extras": {}, "cause": 5},
                {"id": 7, "source": "agent", "action": "finish", "args": {"outputs": {}}, "message": "done"}
            ]
        });
        assert!(detect(&run));
        assert_eq!(run_id(&run).as_deref(), Some("django__django-1"));
        let messages = read(&run).unwrap();
        let calls: Vec<&ToolCall> = messages.iter().flat_map(Message::tool_calls).collect();
        assert_eq!(
            calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            ["execute_bash", "edit", "finish"]
        );
        assert_eq!(calls[0].arguments, r#"{"command":"pytest -x"}"#, "how it ran is not what it asked");
        let results: Vec<&ToolResult> = messages.iter().flat_map(Message::tool_results).collect();
        assert_eq!(results.len(), 2, "finish has no observation");
        assert_eq!((results[0].content.as_str(), results[0].is_error), ("1 failed", false));
        assert!(results[1].is_error);
        let assistant = messages.iter().find(|m| m.tool_calls().next().is_some()).unwrap();
        assert_eq!(assistant.joined_text().as_deref(), Some("Run the tests."));
    }

    #[test]
    fn a_condensation_keeps_its_summary_and_what_was_not_forgotten() {
        let run = serde_json::json!({"history": [
            {"id": 0, "source": "agent", "action": "system", "args": {"content": "You are OpenHands."}},
            {"id": 1, "source": "user", "action": "message", "args": {"content": "Fix the bug."}},
            {"id": 2, "source": "agent", "action": "run", "args": {"command": "cat big.py"}},
            {"id": 3, "source": "agent", "observation": "run", "content": "BIG OUTPUT", "cause": 2},
            {"id": 4, "source": "agent", "action": "run", "args": {"command": "pytest"}},
            {"id": 5, "source": "agent", "observation": "run", "content": "1 failed", "cause": 4},
            {"id": 6, "source": "agent", "action": "condensation", "args": {"forgotten_events_start_id": 2, "forgotten_events_end_id": 3, "summary": "Read big.py.", "summary_offset": 1}},
            {"id": 7, "source": "agent", "action": "finish", "args": {"outputs": {}}}
        ]});
        let messages = read(&run).unwrap();
        let summary = messages.iter().find(|m| m.is_history_summary()).expect("the condensation");
        let text = summary.joined_text().unwrap();
        assert!(text.starts_with("Read big.py."), "{text}");
        assert!(
            text.contains("Fix the bug.") && text.contains("pytest") && text.contains("1 failed"),
            "{text}"
        );
        assert!(
            !text.contains("BIG OUTPUT") && !text.contains("cat big.py"),
            "forgotten events stay out: {text}"
        );
        assert!(!text.contains("You are OpenHands."), "the system prompt stays on its own");
        // The calls are replayed once each; the summary is no call.
        assert_eq!(messages.iter().flat_map(Message::tool_calls).count(), 3);
    }

    #[test]
    fn older_histories_of_action_observation_pairs_are_read() {
        let run = serde_json::json!({
            "instance_id": "astropy__astropy-12907",
            "history": [
                [{"id": 0, "source": "user", "action": "message", "args": {"content": "Fix the bug.", "wait_for_response": false}, "message": "Fix the bug."},
                 {"message": "No observation", "observation": "null", "content": "", "extras": {}}],
                [{"source": "agent", "action": "run", "args": {"command": "ls", "thought": "Look around."}, "message": "Running ls"},
                 {"source": "agent", "observation": "run", "content": "setup.py", "extras": {"exit_code": 0}}],
                [{"id": 7, "source": "agent", "action": "run", "args": {"command": "cat x"}, "message": ""},
                 {"id": 8, "source": "agent", "observation": "error", "content": "No such file", "extras": {}, "cause": 7}],
                [{"source": "agent", "action": "finish", "args": {"outputs": {}}, "message": "done"},
                 {"message": "No observation", "observation": "null", "content": "", "extras": {}}]
            ]
        });
        assert!(detect(&run));
        let messages = read(&run).unwrap();
        assert_eq!(messages[0].joined_text().as_deref(), Some("Fix the bug."));
        let calls: Vec<&str> =
            messages.iter().flat_map(Message::tool_calls).map(|c| c.name.as_str()).collect();
        assert_eq!(calls, ["run", "run", "finish"]);
        let results: Vec<(&str, bool)> = messages
            .iter()
            .flat_map(Message::tool_results)
            .map(|r| (r.content.as_str(), r.is_error))
            .collect();
        assert_eq!(
            results,
            [("setup.py", false), ("No such file", true)],
            "each pair answers its own action"
        );
    }
}
