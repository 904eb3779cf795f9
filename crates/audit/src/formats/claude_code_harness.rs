//! What Claude Code's harness writes into a session, not the person or the model: lines in the
//! model's place, notices that wake the agent, and `attachment` lines.
//!
//! Attachment lines (`{"type": "attachment", "attachment": {"type": ...}}`, since version 2.1.x)
//! record state beside the conversation. Most is bookkeeping (hook runs, mode changes, tool
//! lists, reminders Claude Code re-renders itself); two kinds are text the model is sent that no
//! other line holds:
//!
//! - `queued_command`: a prompt the person typed while the agent was working, delivered with
//!   the agent's next request: a turn of the person's (context only when Claude Code marks it
//!   `isMeta` or a background task's notification queued it);
//! - `hook_additional_context`: text a hook (`SessionStart`, `PostToolUse`, ...) adds to the
//!   next request: context, never a turn.
//!
//! Attachments name their parent like every other line, so a rewind's branches (see
//! [`claude_code_branches`](super::claude_code_branches)) are found through them as before.

use serde_json::Value;

/// An attachment the model was sent, as a user message in Anthropic's form, and whether the
/// harness wrote it (context, no turn); `None` for the attachments that are bookkeeping.
pub fn attachment_message(attachment: &Value) -> Option<(Value, bool)> {
    let text_block = |text: &str| serde_json::json!({"type": "text", "text": text});
    match attachment.get("type").and_then(Value::as_str)? {
        "queued_command" => {
            let content = match attachment.get("prompt")? {
                Value::String(text) => vec![text_block(text)],
                Value::Array(blocks) => blocks.clone(),
                _ => return None,
            };
            let meta = by_task_notification(attachment)
                || attachment.get("isMeta").and_then(Value::as_bool) == Some(true);
            Some((serde_json::json!({"role": "user", "content": content}), meta))
        }
        "hook_additional_context" => {
            let text = match attachment.get("content")? {
                Value::String(text) => text.clone(),
                Value::Array(parts) => parts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n"),
                _ => return None,
            };
            (!text.trim().is_empty())
                .then(|| (serde_json::json!({"role": "user", "content": [text_block(&text)]}), true))
        }
        _ => None,
    }
}

/// Whether an assistant line is one Claude Code wrote in the model's place: an API error
/// (`isApiErrorMessage`) or another message of its `<synthetic>` model (after an interrupt).
/// The model never said it, so it is no turn.
pub(super) fn is_synthetic(line: &Value, message: &Value) -> bool {
    line.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true)
        || message.get("model").and_then(Value::as_str) == Some("<synthetic>")
}

/// Whether a user message is the notice Claude Code writes when a background command or
/// sub-agent finishes (`<task-notification>…`; newer versions also mark its line with an
/// `origin` of that kind): the harness wakes the agent with it, nobody typed it.
pub(super) fn is_notification(line: &Value, message: &Value) -> bool {
    by_task_notification(line)
        || super::text_of(message.get("content")).trim_start().starts_with("<task-notification>")
}

/// Whether a line (or a queued prompt) says it came from a background task's notification:
/// `"origin": {"kind": "task-notification"}`.
fn by_task_notification(value: &Value) -> bool {
    value.get("origin").and_then(|origin| origin.get("kind")).and_then(Value::as_str)
        == Some("task-notification")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_queued_prompt_is_the_persons_and_a_hooks_context_is_the_harnesss() {
        let queued =
            json!({"type": "queued_command", "prompt": "also fix the docs", "commandMode": "prompt"});
        let (prompt, meta) = attachment_message(&queued).unwrap();
        assert_eq!(
            prompt,
            json!({"role": "user", "content": [{"type": "text", "text": "also fix the docs"}]})
        );
        assert!(!meta);
        let pasted = json!({"type": "queued_command", "prompt": [{"type": "text", "text": "see"}, {"type": "image", "source": {}}]});
        assert_eq!(attachment_message(&pasted).unwrap().0["content"].as_array().unwrap().len(), 2);
        let notified = json!({"type": "queued_command", "prompt": "<task-notification>done</task-notification>", "origin": {"kind": "task-notification"}});
        assert!(attachment_message(&notified).unwrap().1);
        let hook = json!({"type": "hook_additional_context", "hookName": "SessionStart:startup", "hookEvent": "SessionStart", "content": ["Branch: main", "Open PRs: 2"]});
        let (context, meta) = attachment_message(&hook).unwrap();
        assert_eq!(context["content"][0]["text"], "Branch: main\nOpen PRs: 2");
        assert!(meta);
    }

    #[test]
    fn bookkeeping_attachments_are_no_messages() {
        for attachment in [
            json!({"type": "hook_success", "hookName": "PostToolUse:Bash", "hookEvent": "PostToolUse", "stdout": "ok"}),
            json!({"type": "todo_reminder", "content": [], "itemCount": 0}),
            json!({"type": "hook_additional_context", "hookName": "h", "hookEvent": "PostToolUse", "content": []}),
            json!({"type": "queued_command"}),
            json!({"prompt": "no type"}),
            json!("not an object"),
        ] {
            assert!(attachment_message(&attachment).is_none(), "{attachment}");
        }
    }

    #[test]
    fn a_session_reads_its_attachments_in_place() {
        let text = concat!(
            r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"Fix the build"}}"#,
            "\n",
            r#"{"type":"attachment","uuid":"h1","parentUuid":"u1","sessionId":"s","isSidechain":false,"attachment":{"type":"hook_additional_context","hookName":"UserPromptSubmit","hookEvent":"UserPromptSubmit","content":"Branch: main"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a1","parentUuid":"h1","sessionId":"s","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"make"}}]}}"#,
            "\n",
            r#"{"type":"user","uuid":"r1","parentUuid":"a1","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}"#,
            "\n",
            r#"{"type":"attachment","uuid":"q1","parentUuid":"r1","sessionId":"s","isSidechain":false,"attachment":{"type":"queued_command","prompt":"and run the tests","commandMode":"prompt"}}"#,
            "\n",
            r#"{"type":"attachment","uuid":"k1","parentUuid":"q1","sessionId":"s","isSidechain":false,"attachment":{"type":"hook_success","hookName":"PostToolUse:Bash","hookEvent":"PostToolUse"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a2","parentUuid":"k1","sessionId":"s","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"Done; tests pass."}]}}"#,
        );
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let mut found = super::super::claude_code::conversations(&lines);
        assert_eq!(found.len(), 1, "attachments are in the main conversation, no branch of their own");
        let messages = super::super::read_chat(found.remove(0).messages).unwrap();
        let read: Vec<(String, Option<&str>, Option<String>)> = messages
            .iter()
            .map(|m| {
                let role = format!("{:?}", m.role).to_lowercase();
                (role, m.internal.as_ref().map(|t| t.reason.as_str()), m.joined_text())
            })
            .collect();
        assert_eq!(read[1], ("user".to_owned(), Some("harness_meta"), Some("Branch: main".to_owned())));
        assert_eq!(read[4], ("user".to_owned(), None, Some("and run the tests".to_owned())));
        assert_eq!(read.len(), 6, "the hook's success record is no message: {read:?}");
    }
}
