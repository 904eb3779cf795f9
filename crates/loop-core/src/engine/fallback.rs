//! The fallback reply (F10): the instruction for the forced text-only call, and the
//! deterministic reply built from the collected context when that call is impossible or fails.

use crate::message::{Message, Role};
use crate::outcome::{LimitReason, StopCause};

/// How far back the deterministic reply looks for gathered results.
const LOOKBACK_MESSAGES: usize = 60;
/// Results quoted in a deterministic reply.
const QUOTED_RESULTS: usize = 3;
/// Characters quoted from one result or note.
const QUOTE_CHARS: usize = 400;

/// The turn-level instruction of the fallback call.
pub fn fallback_instruction(cause: &StopCause) -> String {
    if let StopCause::Limit { reason: LimitReason::SoftTimeLimit } = cause {
        return "Time is almost up for this task. Do not call any tools. Summarise what you have \
                done so far and what you found, say plainly what is not finished, and do not \
                promise further actions: this is your last turn."
            .to_owned();
    }
    format!(
        "The run has stopped because {}. Do not call any tools. Write your final reply now:\n\
         1. Say plainly that the answer is incomplete, and why.\n\
         2. Give the partial result, using only what was already gathered in this conversation.\n\
         3. Say briefly what is still missing.\n\
         4. Do not announce further actions (no \"I will search\" or \"let me check\"): there is \
         no next turn.",
        cause.describe()
    )
}

fn quote(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

/// A reply built without a model: why the run stopped, the model's latest notes, the latest
/// successful tool results, and what is missing. Never empty.
pub fn deterministic_reply(cause: &StopCause, messages: &[Message]) -> String {
    let recent = &messages[messages.len().saturating_sub(LOOKBACK_MESSAGES)..];
    let mut reply = format!("I could not finish this task: {}.", cause.describe());

    let latest_note = recent
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant && !m.is_internal())
        .find_map(Message::joined_text);
    if let Some(note) = latest_note {
        reply.push_str("\n\nMy latest notes: ");
        reply.push_str(&quote(&note));
    }

    let mut gathered = Vec::new();
    for message in recent.iter().rev() {
        for result in message.tool_results().filter(|r| !r.is_error && !r.content.trim().is_empty()) {
            let tool = recent
                .iter()
                .flat_map(Message::tool_calls)
                .find(|c| c.id == result.call_id)
                .map_or("a tool", |c| c.name.as_str());
            gathered.push(format!("- {tool}: {}", quote(&result.content)));
        }
        if gathered.len() >= QUOTED_RESULTS {
            break;
        }
    }
    if !gathered.is_empty() {
        gathered.truncate(QUOTED_RESULTS);
        gathered.reverse();
        reply.push_str("\n\nWhat I gathered so far:\n");
        reply.push_str(&gathered.join("\n"));
    }
    reply.push_str("\n\nStill missing: a complete answer. Send a follow-up message to continue from here.");
    reply
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{ToolCall, ToolResult};

    #[test]
    fn deterministic_reply_quotes_latest_successes_and_skips_errors() {
        let call = ToolCall::new("c1", "search", "{}");
        let bad = ToolCall::new("c2", "fetch", "{}");
        let history = vec![
            Message::user("find it"),
            Message::assistant_with_calls(Some("Looking.".into()), vec![call, bad]),
            Message::tool_result(ToolResult::ok("c1", "found 3 flights")),
            Message::tool_result(ToolResult::error("c2", "Error: timeout")),
        ];
        let reply = deterministic_reply(&StopCause::Limit { reason: LimitReason::MaxTurns }, &history);
        assert!(reply.contains("maximum number of turns"));
        assert!(reply.contains("search: found 3 flights"));
        assert!(!reply.contains("timeout"));
        assert!(reply.contains("Looking."));
    }

    #[test]
    fn deterministic_reply_is_never_empty() {
        let reply = deterministic_reply(&StopCause::EmptyReply, &[]);
        assert!(reply.starts_with("I could not finish"));
    }
}
