//! The message that replaces summarised history: the summary text, the latest successful
//! result of each tool pinned as text (F27), and nothing that refers to dropped tool calls.

use looprail_loop_core::message::{Message, Role};

/// The tag of the summary message (loop-core's [`HISTORY_SUMMARY`], so that a replay or an
/// audit knows the history before it was replaced).
///
/// [`HISTORY_SUMMARY`]: looprail_loop_core::message::HISTORY_SUMMARY
pub const SUMMARY_TAG: &str = looprail_loop_core::message::HISTORY_SUMMARY;
/// Messages whose tag starts with this are the run journal (issue "journal"); they always
/// survive compaction, placed right after the summary.
pub const JOURNAL_TAG_PREFIX: &str = "run_journal";
/// Characters kept of each pinned result.
pub const PINNED_CHARS: usize = 2_000;

/// The instruction for the summary call.
pub const SUMMARY_INSTRUCTION: &str = "Summarise the conversation above for your own later use. \
Keep the task, the decisions taken and why, what was found (names, numbers, paths, ids), what \
failed and why, and what remains to do. Write plain prose and short lists; no preamble.";

/// Results that read as failures are never pinned.
pub fn looks_like_error(content: &str) -> bool {
    let trimmed = content.trim_start();
    trimmed.starts_with("Error") || trimmed.starts_with("error:") || trimmed.starts_with("Not executed")
}

/// The latest successful result of each tool in `part`, as `(tool, text)` in first-seen order.
pub fn pinned_results(part: &[Message]) -> Vec<(String, String)> {
    let mut pins: Vec<(String, String)> = Vec::new();
    for (index, message) in part.iter().enumerate() {
        for result in message.tool_results() {
            if result.is_error || looks_like_error(&result.content) || result.content.trim().is_empty() {
                continue;
            }
            // The call that produced it is in an earlier assistant message of the same part.
            let tool = part[..index]
                .iter()
                .rev()
                .flat_map(Message::tool_calls)
                .find(|c| c.id == result.call_id)
                .map(|c| c.name.clone());
            let Some(tool) = tool else { continue };
            let text: String = result.content.chars().take(PINNED_CHARS).collect();
            match pins.iter_mut().find(|(name, _)| *name == tool) {
                Some(pin) => pin.1 = text,
                None => pins.push((tool, text)),
            }
        }
    }
    pins
}

/// Builds the summary message for `part` with `summary` (a model's or a deterministic note).
pub fn summary_message(summary: &str, part: &[Message], marker: &str) -> Message {
    summary_message_with(summary, part, marker, true)
}

/// Like [`summary_message`], optionally without the pinned results (used when they would make
/// the summary larger than what it replaces).
pub fn summary_message_with(summary: &str, part: &[Message], marker: &str, pins: bool) -> Message {
    let mut text = format!("[{marker}: {} earlier messages]\n{}", part.len(), summary.trim());
    let pins = if pins { pinned_results(part) } else { Vec::new() };
    if !pins.is_empty() {
        text.push_str("\n\nLatest results of each tool from that part:");
        for (tool, result) in pins {
            text.push_str(&format!("\n- {tool}: {result}"));
        }
    }
    Message::internal_user(SUMMARY_TAG, text)
}

/// Replaces `messages[body..split]` by `summary_message`, keeping system messages first and
/// journal messages right after the summary.
pub fn replace_history(messages: &mut Vec<Message>, body: usize, split: usize, summary: Message) {
    replace_history_pinned(messages, body, split, summary, &[]);
}

/// Like [`replace_history`], with `pinned` (what the guards keep after a summary, such as the
/// run journal's pair as the journal is now) placed right after the summary. A pinned message
/// replaces every message with its tag, wherever it was; with nothing pinned, the journal
/// messages of the replaced part are kept as they were.
pub fn replace_history_pinned(
    messages: &mut Vec<Message>,
    body: usize,
    split: usize,
    summary: Message,
    pinned: &[Message],
) {
    fn tag(m: &Message) -> Option<&str> {
        m.internal.as_ref().map(|t| t.reason.as_str())
    }
    let pinned_tags: Vec<&str> = pinned.iter().filter_map(tag).collect();
    let superseded = |m: &Message| tag(m).is_some_and(|t| pinned_tags.contains(&t));
    let mut tail = messages.split_off(split);
    let middle = messages.split_off(body);
    let journal: Vec<Message> = if pinned.is_empty() {
        middle
            .into_iter()
            .filter(|m| {
                m.internal.as_ref().is_some_and(|t| t.reason.starts_with(JOURNAL_TAG_PREFIX))
                    && m.role != Role::Tool
            })
            .collect()
    } else {
        pinned.to_vec()
    };
    messages.retain(|m| !superseded(m));
    tail.retain(|m| !superseded(m));
    messages.push(summary);
    messages.extend(journal);
    messages.extend(tail);
}

#[cfg(test)]
mod tests {
    use super::*;
    use looprail_loop_core::message::{ToolCall, ToolResult};

    #[test]
    fn pinned_messages_replace_their_tags_wherever_they_were() {
        let old = Message::internal_user("run_journal", "objective: old");
        let new = Message::internal_user("run_journal", "objective: new");
        let mut messages = vec![
            Message::system("sys"),
            old.clone(),
            Message::user("go"),
            Message::assistant("working"),
            Message::user("more"),
            old,
            Message::assistant("still working"),
        ];
        let summary = summary_message("went", &messages[1..4], "Summary");
        replace_history_pinned(&mut messages, 1, 4, summary, std::slice::from_ref(&new));
        let texts: Vec<String> = messages.iter().map(|m| m.joined_text().unwrap_or_default()).collect();
        assert_eq!(messages[2], new, "{texts:?}");
        assert_eq!(
            messages
                .iter()
                .filter(|m| m.internal.as_ref().is_some_and(|t| t.reason == "run_journal"))
                .count(),
            1
        );
        assert_eq!(messages.len(), 5, "system, summary, pinned, user, assistant: {texts:?}");
    }

    #[test]
    fn the_journal_pair_is_kept_right_after_the_summary() {
        let journal = Message::internal_user("run_journal", "## Run journal\nobjective: fix the parser");
        let ack = Message::assistant("Noted: I will continue from this journal.").tagged("run_journal_ack");
        let mut messages = vec![
            Message::system("You are a coding agent."),
            journal.clone(),
            ack.clone(),
            Message::user("Fix the parser."),
            Message::assistant_with_calls(None, vec![ToolCall::new("1", "read", "{}")]),
            Message::tool_result(ToolResult::ok("1", "fn parse() {}")),
            Message::assistant("Reading more."),
            Message::user("Go on."),
        ];
        let summary = summary_message("We read the parser.", &messages[1..6], "Summary");
        replace_history(&mut messages, 1, 6, summary);
        let tags: Vec<Option<&str>> =
            messages.iter().map(|m| m.internal.as_ref().map(|t| t.reason.as_str())).collect();
        assert_eq!(
            tags,
            [None, Some(SUMMARY_TAG), Some("run_journal"), Some("run_journal_ack"), None, None],
            "system, summary, the journal pair, then the kept tail"
        );
        assert_eq!(messages[2], journal);
        assert_eq!(messages[3], ack);
        assert_eq!(messages[4].joined_text().as_deref(), Some("Reading more."));
    }

    #[test]
    fn the_latest_successful_result_per_tool_is_pinned_and_errors_never_are() {
        let part = vec![
            Message::assistant_with_calls(
                None,
                vec![ToolCall::new("1", "search", "{}"), ToolCall::new("2", "fetch", "{}")],
            ),
            Message::tool_result(ToolResult::ok("1", "old search")),
            Message::tool_result(ToolResult::error("2", "Error: 500")),
            Message::assistant_with_calls(
                None,
                vec![ToolCall::new("3", "search", "{}"), ToolCall::new("4", "fetch", "{}")],
            ),
            Message::tool_result(ToolResult::ok("3", "new search")),
            Message::tool_result(ToolResult::ok("4", "Error: timeout")),
        ];
        assert_eq!(pinned_results(&part), [("search".to_owned(), "new search".to_owned())]);
        let message = summary_message("We searched.", &part, "Summary");
        let text = message.joined_text().unwrap();
        assert!(text.contains("- search: new search") && !text.contains("timeout"));
        assert!(message.is_internal());
        assert_eq!(message.tool_results().count(), 0, "pins are text, never tool results");
    }
}
