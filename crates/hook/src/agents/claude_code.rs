//! Claude Code's hooks: the event on stdin, the answer on stdout.
//!
//! Every event carries `session_id`, `transcript_path`, `cwd` and `hook_event_name`.
//! `PreToolUse` adds `tool_name`, `tool_input` and `tool_use_id`; `PostToolUse` adds
//! `tool_response` (Bash: `stdout`, `stderr`, `interrupted`; other tools their own objects);
//! `PostToolUseFailure` adds `error` instead; `UserPromptSubmit` adds `prompt`.
//!
//! Answers: a `PreToolUse` decision is `hookSpecificOutput.permissionDecision` (`deny`, shown to
//! the model with `permissionDecisionReason`; `ask`, the user's permission prompt showing the
//! reason); a `PostToolUse` remark is `decision: "block"` with a `reason` the model reads (the
//! tool already ran) and the same text as `hookSpecificOutput.additionalContext`; a stop is
//! `continue: false` with a `stopReason` shown to the user; at `Stop` (the end of a turn), going
//! on is `decision: "block"` with the `reason` the model reads next. Nothing to say is no output
//! at all.

use serde_json::{Value, json};

use super::{field, output_text, text_of, tool_use};
use crate::HookError;
use crate::event::{Answer, EventKind, HookEvent, ToolOutput};

/// Reads one Claude Code hook event.
///
/// ```
/// use looprail_hook::agents::claude_code;
/// use looprail_hook::event::EventKind;
///
/// let event = claude_code::parse(br#"{"session_id": "s1", "hook_event_name": "PreToolUse",
///     "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1"}"#)?;
/// assert_eq!(event.session, "s1");
/// let EventKind::BeforeTool(call) = event.kind else { panic!() };
/// assert_eq!((call.tool.as_str(), call.arguments.as_str()), ("Bash", r#"{"command":"ls"}"#));
/// # Ok::<(), looprail_hook::HookError>(())
/// ```
pub fn parse(input: &[u8]) -> Result<HookEvent, HookError> {
    let event: Value = serde_json::from_slice(input).map_err(|e| HookError::BadEvent(e.to_string()))?;
    let session = field(&event, "session_id")?.to_owned();
    let name = field(&event, "hook_event_name")?;
    let call = || tool_use(&event, event.get("tool_use_id").and_then(Value::as_str).map(str::to_owned));
    let kind = match name {
        "SessionStart" => EventKind::SessionStart,
        // Qwen Code also sends one, with an empty prompt, each time a turn goes on after its
        // tool calls: no new request from the user, so no new stretch.
        "UserPromptSubmit" if event.get("prompt").and_then(Value::as_str) == Some("") => {
            EventKind::Other("UserPromptSubmit (a turn going on)".to_owned())
        }
        "UserPromptSubmit" => EventKind::UserPrompt,
        "PreToolUse" => EventKind::BeforeTool(call()?),
        "PostToolUse" => {
            let response = event.get("tool_response").unwrap_or(&Value::Null);
            let failed = response.get("interrupted").and_then(Value::as_bool).unwrap_or(false)
                || response.get("is_error").and_then(Value::as_bool).unwrap_or(false);
            let call = call()?;
            let text = output_text(response, &call.arguments);
            EventKind::AfterTool(call, ToolOutput { text, failed })
        }
        "PostToolUseFailure" => {
            let error = event.get("error").unwrap_or(&Value::Null);
            EventKind::AfterTool(call()?, ToolOutput { text: text_of(error), failed: true })
        }
        // A subagent's end is not the agent's: its todo list is the main loop's business.
        "Stop" => EventKind::Stop,
        "SessionEnd" => EventKind::SessionEnd,
        other => EventKind::Other(other.to_owned()),
    };
    Ok(HookEvent { session, kind })
}

/// The answer to an event of `kind` as Claude Code reads it: the JSON for stdout (`None`: print
/// nothing). Always exit code 0: the decision is in the JSON.
pub fn render(kind: &EventKind, answer: &Answer) -> Option<Value> {
    let before = matches!(kind, EventKind::BeforeTool(_));
    match answer {
        Answer::Allow => None,
        Answer::Tell(text) if before => Some(json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "additionalContext": text}})),
        // At the end of a turn: it is not over; the reason is what the model reads next.
        Answer::Tell(text) if *kind == EventKind::Stop => Some(json!({"decision": "block", "reason": text})),
        Answer::Tell(text) => Some(json!({"decision": "block", "reason": text,
            "hookSpecificOutput": {"hookEventName": event_name(kind), "additionalContext": text}})),
        Answer::Deny(reason) => Some(json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "deny", "permissionDecisionReason": reason}})),
        Answer::Ask(reason) if before => Some(json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "ask", "permissionDecisionReason": reason}})),
        Answer::Ask(reason) => Some(json!({"systemMessage": reason})),
        Answer::Stop(reason) if before => Some(json!({"continue": false, "stopReason": reason,
            "hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": "deny", "permissionDecisionReason": reason}})),
        Answer::Stop(reason) => Some(json!({"continue": false, "stopReason": reason})),
    }
}

fn event_name(kind: &EventKind) -> &'static str {
    match kind {
        EventKind::AfterTool(_, output) if output.failed => "PostToolUseFailure",
        EventKind::AfterTool(..) => "PostToolUse",
        EventKind::UserPrompt => "UserPromptSubmit",
        EventKind::SessionStart => "SessionStart",
        _ => "PreToolUse",
    }
}
