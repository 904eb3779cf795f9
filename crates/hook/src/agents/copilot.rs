//! GitHub Copilot CLI's hooks: the event on stdin, the answer on stdout.
//!
//! Copilot CLI reads hook files from `.github/hooks/*.json` in a repository and from
//! `~/.copilot/hooks/*.json`. An event configured by its PascalCase name (`PreToolUse`,
//! `PostToolUse`, `PostToolUseFailure`, `UserPromptSubmit`, `SessionStart`, `SessionEnd`,
//! `Stop`) arrives in the snake_case form: `hook_event_name`, `session_id`, `tool_name` (`Bash`
//! for its shell), `tool_input`, and after a call `tool_result` with `result_type` (`success`,
//! `failure`, `denied`, `error`) and `text_result_for_llm`, or `error` after a failed one. An
//! event configured by its camelCase name (`preToolUse`…) arrives with camelCase fields and no
//! event name (`sessionId`, `toolName`, `toolArgs`, `toolResult.textResultForLlm`); both are
//! read, the camelCase kind told by its fields.
//!
//! Answers: before a call, `permissionDecision` `deny` (the model reads the
//! `permissionDecisionReason`) or `ask` (the user's permission prompt; denied where no one can
//! answer it, as in `copilot -p`), and a remark as `hookSpecificOutput.additionalContext`; after
//! a call, a remark as `additionalContext`, which Copilot appends to the tool's result. Its
//! hooks cannot stop the agent: once the stretch is stopped every further call is denied, the
//! model told to end its turn. At `Stop`, going on is `decision: "block"` with the `reason` as
//! the next prompt.

use serde_json::{Value, json};

use super::{field, stopped, text_of};
use crate::HookError;
use crate::event::{Answer, EventKind, HookEvent, ToolOutput, ToolUse};

/// Reads one Copilot CLI hook event, in either of its forms.
///
/// ```
/// use looprail_hook::agents::copilot;
/// use looprail_hook::event::EventKind;
///
/// let event = copilot::parse(br#"{"hook_event_name": "PostToolUse", "session_id": "c1",
///     "timestamp": "2026-12-02T07:00:58.173Z", "cwd": "/work", "tool_name": "Bash",
///     "tool_input": {"command": "make"},
///     "tool_result": {"result_type": "failure", "text_result_for_llm": "make: *** No targets"}}"#)?;
/// let EventKind::AfterTool(call, output) = event.kind else { panic!() };
/// assert_eq!((call.tool.as_str(), output.text.as_str(), output.failed), ("Bash", "make: *** No targets", true));
/// // The camelCase form: no event name, told by its fields.
/// let event = copilot::parse(br#"{"sessionId": "c1", "timestamp": 1, "cwd": "/work",
///     "toolName": "bash", "toolArgs": "{\"command\": \"make\"}"}"#)?;
/// assert!(matches!(event.kind, EventKind::BeforeTool(call) if call.arguments == r#"{"command":"make"}"#));
/// # Ok::<(), looprail_hook::HookError>(())
/// ```
pub fn parse(input: &[u8]) -> Result<HookEvent, HookError> {
    let event: Value = serde_json::from_slice(input).map_err(|e| HookError::BadEvent(e.to_string()))?;
    if event.get("hook_event_name").is_some() {
        return parse_named(&event);
    }
    let session = field(&event, "sessionId")?.to_owned();
    let has = |key: &str| event.get(key).is_some();
    let call = || call_of(&event, "toolName", "toolArgs");
    let kind = if let Some(result) = event.get("toolResult") {
        EventKind::AfterTool(call()?, output_of(result, "resultType", "textResultForLlm"))
    } else if has("toolName") && has("error") {
        EventKind::AfterTool(call()?, ToolOutput { text: text_of(&event["error"]), failed: true })
    } else if has("toolName") {
        EventKind::BeforeTool(call()?)
    } else if has("prompt") {
        EventKind::UserPrompt
    } else if has("source") {
        EventKind::SessionStart
    } else if has("stopReason") && !has("agentName") {
        EventKind::Stop
    } else if has("reason") {
        EventKind::SessionEnd
    } else {
        EventKind::Other("unknown".to_owned())
    };
    Ok(HookEvent { session, kind })
}

fn parse_named(event: &Value) -> Result<HookEvent, HookError> {
    let session = field(event, "session_id")?.to_owned();
    let call = || call_of(event, "tool_name", "tool_input");
    let kind = match field(event, "hook_event_name")? {
        "SessionStart" => EventKind::SessionStart,
        "UserPromptSubmit" => EventKind::UserPrompt,
        "PreToolUse" => EventKind::BeforeTool(call()?),
        "PostToolUse" => {
            let result = event.get("tool_result").unwrap_or(&Value::Null);
            EventKind::AfterTool(call()?, output_of(result, "result_type", "text_result_for_llm"))
        }
        "PostToolUseFailure" => {
            let error = event.get("error").unwrap_or(&Value::Null);
            EventKind::AfterTool(call()?, ToolOutput { text: text_of(error), failed: true })
        }
        "Stop" => EventKind::Stop,
        "SessionEnd" => EventKind::SessionEnd,
        other => EventKind::Other(other.to_owned()),
    };
    Ok(HookEvent { session, kind })
}

/// The call: its arguments are an object, or (older releases) that object as a JSON string.
fn call_of(event: &Value, name: &'static str, arguments: &str) -> Result<ToolUse, HookError> {
    let arguments = match event.get(arguments) {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(parsed) => parsed.to_string(),
            Err(_) => Value::String(text.clone()).to_string(),
        },
        Some(other) => other.to_string(),
    };
    Ok(ToolUse { tool: field(event, name)?.to_owned(), arguments, id: None })
}

fn output_of(result: &Value, kind: &str, text: &str) -> ToolOutput {
    let failed = result.get(kind).and_then(Value::as_str).is_some_and(|k| k != "success");
    ToolOutput { text: text_of(result.get(text).unwrap_or(result)), failed }
}

/// The answer to an event of `kind` as Copilot CLI reads it: the JSON for stdout (`None`: print
/// nothing).
pub fn render(kind: &EventKind, answer: &Answer) -> Option<Value> {
    let before = matches!(kind, EventKind::BeforeTool(_));
    let deny = |reason: String| json!({"permissionDecision": "deny", "permissionDecisionReason": reason});
    match answer {
        Answer::Allow => None,
        Answer::Tell(text) if *kind == EventKind::Stop => Some(json!({"decision": "block", "reason": text})),
        Answer::Tell(text) if before => {
            Some(json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": text}}))
        }
        Answer::Tell(text) => Some(json!({"additionalContext": text})),
        Answer::Deny(reason) if before => Some(deny(reason.clone())),
        Answer::Ask(question) if before => {
            Some(json!({"permissionDecision": "ask", "permissionDecisionReason": question}))
        }
        Answer::Stop(reason) if before => Some(deny(stopped(reason))),
        // After a call: nothing to refuse any more; the model reads it with the result.
        Answer::Deny(text) | Answer::Ask(text) => Some(json!({"additionalContext": text})),
        Answer::Stop(reason) => Some(json!({"additionalContext": stopped(reason)})),
    }
}
