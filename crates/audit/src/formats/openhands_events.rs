//! What both forms of OpenHands history share (its evaluation outputs' events, read by
//! [`openhands`](super::openhands), and its agent SDK's, read by
//! [`openhands_sdk`](super::openhands_sdk)): event ids, and the context after a condensation.

use std::collections::HashSet;

use looprail::core::message::{HISTORY_SUMMARY, Message, Role};
use serde_json::Value;

/// The id of an event as text (OpenHands numbers its events; its agent SDK names them with
/// uuids), so both forms of history share [`condensed`].
pub(super) fn event_id(event: &Value) -> Option<String> {
    match event.get("id")? {
        Value::String(id) => Some(id.clone()),
        Value::Number(id) => Some(id.to_string()),
        _ => None,
    }
}

/// What the agent was sent after a condensation (OpenHands' condenser forgets events and may
/// leave a summary): one history summary holding the summary and every earlier message whose
/// event (`sources`, by message) is not `forgotten`, so the context is measured again from
/// there (system messages stay).
pub(super) fn condensed(
    summary: &str,
    messages: &[Message],
    sources: &[Option<String>],
    forgotten: &HashSet<String>,
) -> Message {
    let kept = messages.iter().zip(sources).filter(|(message, source)| {
        message.role != Role::System
            && !message.is_history_summary()
            && source.as_ref().is_none_or(|id| !forgotten.contains(id))
    });
    let mut text = summary.to_owned();
    let carried = super::flattened(kept.map(|(message, _)| message));
    if !carried.is_empty() {
        text.push('\n');
        text.push_str(&carried);
    }
    Message::internal_user(HISTORY_SUMMARY, text)
}
