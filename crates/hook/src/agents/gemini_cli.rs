//! Gemini CLI's hooks: the event on stdin, the answer on stdout.
//!
//! Every event carries `session_id`, `transcript_path`, `cwd`, `hook_event_name` and
//! `timestamp`. `BeforeTool` adds `tool_name` and `tool_input`; `AfterTool` adds
//! `tool_response` (`llmContent`, `returnDisplay`, and `error` when the call failed);
//! `BeforeAgent` adds the user's `prompt`.
//!
//! Answers: a `BeforeTool` denial is `decision: "deny"` with a `reason` the model reads as the
//! call's error; an `AfterTool` remark is `hookSpecificOutput.additionalContext`, appended to the
//! tool's result; a stop is `continue: false` with a `stopReason` shown to the user. Gemini CLI's
//! hooks have no permission prompt: the question goes to the user as a `systemMessage`, and the
//! call is denied with the model told to ask the user. Nothing to say is `{}`.

use serde_json::{Value, json};

use super::{field, output_text, text_of, tool_use};
use crate::HookError;
use crate::event::{Answer, EventKind, HookEvent, ToolOutput};

/// Reads one Gemini CLI hook event.
///
/// ```
/// use looprail_hook::agents::gemini_cli;
/// use looprail_hook::event::EventKind;
///
/// let event = gemini_cli::parse(br#"{"session_id": "g1", "hook_event_name": "AfterTool",
///     "timestamp": "2026-11-25T10:00:00Z", "tool_name": "run_shell_command",
///     "tool_input": {"command": "make"}, "tool_response": {"llmContent": "ok", "returnDisplay": "ok"}}"#)?;
/// let EventKind::AfterTool(call, output) = event.kind else { panic!() };
/// assert_eq!((call.tool.as_str(), output.text.as_str(), output.failed), ("run_shell_command", "ok", false));
/// # Ok::<(), looprail_hook::HookError>(())
/// ```
pub fn parse(input: &[u8]) -> Result<HookEvent, HookError> {
    let event: Value = serde_json::from_slice(input).map_err(|e| HookError::BadEvent(e.to_string()))?;
    let session = field(&event, "session_id")?.to_owned();
    let name = field(&event, "hook_event_name")?;
    let call = || tool_use(&event, None);
    let kind = match name {
        "SessionStart" => EventKind::SessionStart,
        "BeforeAgent" => EventKind::UserPrompt,
        "BeforeTool" => EventKind::BeforeTool(call()?),
        "AfterTool" => {
            let response = event.get("tool_response").unwrap_or(&Value::Null);
            let error = response.get("error").filter(|e| !e.is_null());
            let call = call()?;
            let text = match error {
                Some(error) if response.get("llmContent").is_none() => text_of(error),
                _ => output_text(response, &call.arguments),
            };
            EventKind::AfterTool(call, ToolOutput { text, failed: error.is_some() })
        }
        // Gemini CLI's end of a turn: no todo nudge through it yet.
        "AfterAgent" => EventKind::Other("AfterAgent".to_owned()),
        "SessionEnd" => EventKind::SessionEnd,
        other => EventKind::Other(other.to_owned()),
    };
    Ok(HookEvent { session, kind })
}

/// The answer to an event of `kind` as Gemini CLI reads it (exit code 0, JSON on stdout).
pub fn render(kind: &EventKind, answer: &Answer) -> Value {
    let before = matches!(kind, EventKind::BeforeTool(_));
    match answer {
        Answer::Allow => json!({}),
        Answer::Tell(text) => json!({"hookSpecificOutput": {"additionalContext": text}}),
        Answer::Deny(reason) => json!({"decision": "deny", "reason": reason}),
        Answer::Ask(question) if before => json!({"decision": "deny", "systemMessage": question,
            "reason": format!("{question} The call did not run: stop and ask the user how to go on.")}),
        Answer::Ask(question) => json!({"systemMessage": question}),
        Answer::Stop(reason) => json!({"continue": false, "stopReason": reason}),
    }
}
