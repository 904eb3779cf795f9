//! Where a conversation may be cut: never between a tool call and its results.

use looprail_loop_core::message::{Message, Role};

/// The index after the leading system messages (they are never dropped).
pub fn body_start(messages: &[Message]) -> usize {
    messages.iter().take_while(|m| m.role == Role::System).count()
}

/// The start of a kept tail of about `keep` messages that orphans no tool result: moved back
/// while it would start on a tool result, so the assistant call that produced it is kept too.
pub fn tail_start(messages: &[Message], keep: usize) -> usize {
    let floor = body_start(messages);
    let mut start = messages.len().saturating_sub(keep).max(floor);
    while start > floor && messages[start].role == Role::Tool {
        start -= 1;
    }
    start
}

/// True when every tool result is answered by a call in the assistant message just before its
/// run of tool results, and every system message comes first: the shape every provider accepts.
pub fn well_formed(messages: &[Message]) -> bool {
    let body = body_start(messages);
    if messages[body..].iter().any(|m| m.role == Role::System) {
        return false;
    }
    let mut open: Vec<&str> = Vec::new();
    for message in &messages[body..] {
        match message.role {
            Role::Assistant => open = message.tool_calls().map(|c| c.id.as_str()).collect(),
            Role::Tool => {
                for result in message.tool_results() {
                    if !open.contains(&result.call_id.as_str()) {
                        return false;
                    }
                }
            }
            _ => open.clear(),
        }
    }
    true
}
