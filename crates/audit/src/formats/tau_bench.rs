//! τ-bench results, as its runners save them: one file holds every run.
//!
//! - τ-bench: a JSON array of `{"task_id", "trial", "reward", "info", "traj"}`, `traj` being
//!   the OpenAI chat messages the agent exchanged (system prompt included).
//! - τ²-bench: `{"info", "tasks", "simulations": [{"task_id", "trial", "messages", ...}]}`; a
//!   message's `tool_calls` are `{"id", "name", "arguments": {...}, "requestor"}` and a tool
//!   message answers one by `id`, with an `error` flag. Calls the simulated user makes on its own
//!   device (`requestor: "user"`) and their results are the user's side: the agent never sees
//!   them. τ² does not save the agent's system prompt.
//!
//! Each run is named `task-<task_id>-trial-<trial>`.

use looprail::core::message::{Message, ToolCall, ToolResult};
use serde_json::Value;

use super::{FileRuns, FoundRun, read_chat, text_of};

/// The runs of a τ-bench or τ²-bench results document, `None` when it is neither.
pub fn runs(doc: &Value) -> Option<Result<FileRuns, String>> {
    if let Some(results) = doc.as_array().filter(|r| !r.is_empty() && r.iter().all(is_tau_result)) {
        return Some(FileRuns::each(results.iter().map(|result| {
            let id = name(result);
            let traj = result.get("traj").and_then(Value::as_array).cloned().unwrap_or_default();
            read_chat(traj).map(|m| FoundRun::new(Some(id.clone()), m)).map_err(|e| format!("{id}: {e}"))
        })));
    }
    let simulations = doc.get("simulations").and_then(Value::as_array)?;
    if simulations.is_empty() || !simulations.iter().all(|s| s.get("messages").is_some_and(Value::is_array)) {
        return None;
    }
    Some(FileRuns::each(simulations.iter().map(|simulation| {
        let id = name(simulation);
        simulation_messages(simulation)
            .map(|m| FoundRun::new(Some(id.clone()), m))
            .map_err(|e| format!("{id}: {e}"))
    })))
}

fn is_tau_result(result: &Value) -> bool {
    result.get("traj").is_some_and(Value::is_array) && result.get("task_id").is_some()
}

/// `task-<task_id>-trial-<trial>`.
fn name(run: &Value) -> String {
    let field = |key: &str| match run.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => "?".to_owned(),
        Some(other) => other.to_string(),
    };
    format!("task-{}-trial-{}", field("task_id"), field("trial"))
}

/// What the agent of a τ² simulation exchanged.
fn simulation_messages(simulation: &Value) -> Result<Vec<Message>, String> {
    let recorded = simulation.get("messages").and_then(Value::as_array).ok_or("no `messages` list")?;
    let by_user = |v: &Value| v.get("requestor").and_then(Value::as_str) == Some("user");
    let mut messages = Vec::with_capacity(recorded.len());
    for message in recorded {
        let text = text_of(message.get("content"));
        match message.get("role").and_then(Value::as_str).unwrap_or_default() {
            "system" => messages.push(Message::system(text)),
            // A user message with only calls on the user's own device says nothing to the agent.
            "user" if text.trim().is_empty() => {}
            "user" => messages.push(Message::user(text)),
            "assistant" => {
                let calls: Vec<ToolCall> = message
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|c| !by_user(c))
                    .map(|call| {
                        let text = |key: &str| call.get(key).and_then(Value::as_str).unwrap_or_default();
                        let arguments =
                            call.get("arguments").map_or_else(|| "{}".to_owned(), super::arguments_text);
                        ToolCall::new(text("id"), text("name"), arguments)
                    })
                    .collect();
                messages.push(super::assistant_turn(text, calls));
            }
            "tool" if !by_user(message) => {
                let id = message.get("id").and_then(Value::as_str).unwrap_or_default();
                let failed = message.get("error").and_then(Value::as_bool).unwrap_or(false);
                let result = if failed { ToolResult::error(id, text) } else { ToolResult::ok(id, text) };
                messages.push(Message::tool_result(result));
            }
            _ => {}
        }
    }
    Ok(messages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tau_bench_results_array_is_one_run_per_task_and_trial() {
        let doc = serde_json::json!([
            {"task_id": 3, "trial": 0, "reward": 1.0, "info": {}, "traj": [
                {"role": "system", "content": "Airline policy."},
                {"role": "user", "content": "Cancel my flight."},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_user_details", "arguments": "{\"user_id\": \"u\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "name": "get_user_details", "content": "{}"},
                {"role": "assistant", "content": "Done."}
            ]},
            {"task_id": 3, "trial": 1, "reward": 0.0, "info": {}, "traj": [{"role": "user", "content": "Hi"}]}
        ]);
        let file = runs(&doc).unwrap().unwrap();
        let ids: Vec<&str> = file.runs.iter().map(|r| r.id.as_deref().unwrap()).collect();
        assert_eq!(ids, ["task-3-trial-0", "task-3-trial-1"]);
        assert_eq!(file.runs[0].messages.iter().flat_map(Message::tool_calls).count(), 1);
        assert!(
            runs(&serde_json::json!([{"role": "user", "content": "x"}])).is_none(),
            "a chat log is no results file"
        );
    }

    #[test]
    fn a_tau2_simulation_keeps_the_agents_side() {
        let doc = serde_json::json!({"info": {}, "tasks": [], "simulations": [{
            "id": "sim-1", "task_id": "telecom_7", "trial": 2, "termination_reason": "user_stop",
            "messages": [
                {"role": "assistant", "content": "Hi! How can I help?", "turn_idx": 0},
                {"role": "user", "content": "My data is off.", "turn_idx": 1},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "t1", "name": "get_line", "arguments": {"phone": "555"}, "requestor": "assistant"}]},
                {"role": "tool", "id": "t1", "content": "not found", "requestor": "assistant", "error": true},
                {"role": "user", "content": null, "tool_calls": [{"id": "u1", "name": "toggle_data", "arguments": {}, "requestor": "user"}]},
                {"role": "tool", "id": "u1", "content": "data on", "requestor": "user", "error": false},
                {"role": "user", "content": "Done, it works."}
            ]
        }]});
        let file = runs(&doc).unwrap().unwrap();
        assert_eq!(file.runs[0].id.as_deref(), Some("task-telecom_7-trial-2"));
        let messages = &file.runs[0].messages;
        let calls: Vec<&ToolCall> = messages.iter().flat_map(Message::tool_calls).collect();
        assert_eq!(calls.len(), 1, "the user's own device calls are not the agent's");
        assert_eq!(calls[0].arguments, r#"{"phone":"555"}"#);
        let results: Vec<&ToolResult> = messages.iter().flat_map(Message::tool_results).collect();
        assert_eq!((results.len(), results[0].is_error), (1, true));
    }
}
