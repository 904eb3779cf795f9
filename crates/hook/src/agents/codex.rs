//! Codex CLI's hooks: Claude Code's events, answered within what Codex accepts.
//!
//! Codex (`hooks.json` in `~/.codex` or a project's `.codex`) sends Claude Code's events with
//! Claude Code's fields, and a few of its own (`turn_id`, `model`): `PreToolUse` and
//! `PostToolUse` with `tool_name` (`Bash` for its shell), `tool_input` and `tool_use_id`, the
//! shell's output in `tool_response` as one string; `UserPromptSubmit`, `SessionStart` and
//! `Stop`. It has no `SessionEnd` and no `PostToolUseFailure`. Events are read by
//! [`claude_code::parse`](super::claude_code::parse).
//!
//! Answers differ where Codex refuses what Claude Code accepts (an answer Codex refuses is
//! ignored, so the call would go on unguarded):
//! - a remark is `hookSpecificOutput.additionalContext` (Codex adds it for the model as a
//!   developer message) before and after a call alike;
//! - a `PreToolUse` hook cannot ask the user (`permissionDecision: "ask"` is refused) nor stop
//!   the agent (`continue: false` is refused there): the call is denied instead, with the
//!   reason the model reads, and the question or the stop is also shown to the user as a
//!   `systemMessage`;
//! - after a call, a stop is `continue: false` with a `stopReason` for the user and a `reason`
//!   the model reads in place of the call's output. Codex goes on to the model's next reply, so
//!   the stretch ends when the model, told that every further call is refused, answers.

use serde_json::{Value, json};

use super::stopped;
use crate::event::{Answer, EventKind};

/// The answer to an event of `kind` as Codex reads it: the JSON for stdout (`None`: print
/// nothing; exit code 0 either way).
///
/// ```
/// use looprail_hook::agents::codex;
/// use looprail_hook::event::{Answer, EventKind, ToolUse};
///
/// let call = ToolUse { tool: "Bash".into(), arguments: r#"{"command":"make"}"#.into(), id: None };
/// let asked = codex::render(&EventKind::BeforeTool(call), &Answer::Ask("Let it go on?".into())).unwrap();
/// // Codex has no permission prompt for hooks: the call is denied, the user told.
/// assert_eq!(asked["hookSpecificOutput"]["permissionDecision"], "deny");
/// assert_eq!(asked["systemMessage"], "Let it go on?");
/// ```
pub fn render(kind: &EventKind, answer: &Answer) -> Option<Value> {
    let before = matches!(kind, EventKind::BeforeTool(_));
    let deny = |reason: String| json!({"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason});
    match answer {
        Answer::Allow => None,
        // At the end of a turn: it is not over; the reason is what the model reads next.
        Answer::Tell(text) if *kind == EventKind::Stop => Some(json!({"decision": "block", "reason": text})),
        Answer::Tell(text) => Some(json!({"hookSpecificOutput": {
            "hookEventName": if before { "PreToolUse" } else { event_name(kind) },
            "additionalContext": text}})),
        Answer::Deny(reason) => Some(json!({"hookSpecificOutput": deny(reason.clone())})),
        Answer::Ask(question) if before => Some(json!({"systemMessage": question,
            "hookSpecificOutput": deny(format!(
                "{question} The call did not run: stop and ask the user how to go on."))})),
        Answer::Ask(question) => Some(json!({"systemMessage": question})),
        Answer::Stop(reason) if before => Some(json!({"systemMessage": reason,
            "hookSpecificOutput": deny(stopped(reason))})),
        Answer::Stop(reason) => Some(json!({"continue": false, "stopReason": reason,
            "reason": stopped(reason)})),
    }
}

fn event_name(kind: &EventKind) -> &'static str {
    match kind {
        EventKind::AfterTool(..) => "PostToolUse",
        EventKind::UserPrompt => "UserPromptSubmit",
        EventKind::SessionStart => "SessionStart",
        _ => "PreToolUse",
    }
}
