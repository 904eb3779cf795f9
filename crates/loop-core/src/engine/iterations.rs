//! The max-iterations handler (F11, S4) and the three stuck-signal helpers a handler can use.
//! Every helper looks only at the last `window` messages, never the whole history.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::message::{Message, Role};

/// What to do when the iteration cap is hit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", content = "message", rename_all = "snake_case")]
pub enum IterationDecision {
    /// Grant another `max_iterations` turns.
    Continue,
    /// Stop; the user gets the fallback reply (F10).
    Stop,
    /// Add this instruction as a (runtime-tagged) user message and reset the counter.
    NewInstruction(String),
}

/// Decides what happens at the iteration cap. The default, [`StopAtCap`], stops.
#[async_trait]
pub trait MaxIterationsHandler: Send + Sync {
    /// Called with the iterations consumed and the conversation.
    async fn on_max_iterations(&self, count: u32, messages: &[Message]) -> IterationDecision;
}

/// The default handler: always [`IterationDecision::Stop`].
#[derive(Debug, Clone, Copy, Default)]
pub struct StopAtCap;

#[async_trait]
impl MaxIterationsHandler for StopAtCap {
    async fn on_max_iterations(&self, _count: u32, _messages: &[Message]) -> IterationDecision {
        IterationDecision::Stop
    }
}

fn tail(messages: &[Message], window: usize) -> &[Message] {
    &messages[messages.len().saturating_sub(window)..]
}

/// Signal 1: the share of tool calls in the last `window` messages made to the single most
/// called tool, or `None` when there were no tool calls.
pub fn repeated_single_tool_share(messages: &[Message], window: usize) -> Option<f64> {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    let mut total = 0usize;
    for call in tail(messages, window).iter().flat_map(Message::tool_calls) {
        total += 1;
        match counts.iter_mut().find(|(name, _)| *name == call.name) {
            Some((_, n)) => *n += 1,
            None => counts.push((call.name.as_str(), 1)),
        }
    }
    let top = counts.iter().map(|(_, n)| *n).max()?;
    Some(top as f64 / total as f64)
}

/// Signal 2: every tool result in the last `window` messages is an error (false when there
/// are none).
pub fn all_errors(messages: &[Message], window: usize) -> bool {
    let mut any = false;
    for result in tail(messages, window).iter().flat_map(Message::tool_results) {
        if !result.is_error {
            return false;
        }
        any = true;
    }
    any
}

/// Signal 3: no assistant message in the last `window` messages carries text.
pub fn no_text_progress(messages: &[Message], window: usize) -> bool {
    !tail(messages, window).iter().any(|m| m.role == Role::Assistant && m.joined_text().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{ToolCall, ToolResult};

    fn step(name: &str, ok: bool) -> [Message; 2] {
        let call = ToolCall::new(format!("{name}-id"), name, "{}");
        let result =
            if ok { ToolResult::ok(&call.id, "fine") } else { ToolResult::error(&call.id, "Error: no") };
        [Message::assistant_with_calls(None, vec![call]), Message::tool_result(result)]
    }

    #[test]
    fn helpers_read_only_the_window() {
        let mut history = vec![Message::user("go"), Message::assistant("thinking")];
        for _ in 0..4 {
            history.extend(step("grep", false));
        }
        history.extend(step("ls", false));
        assert_eq!(repeated_single_tool_share(&history, 10), Some(0.8));
        assert!(all_errors(&history, 10));
        assert!(no_text_progress(&history, 10));
        assert!(!no_text_progress(&history, 20));
        history.extend(step("ls", true));
        assert!(!all_errors(&history, 10));
        assert_eq!(repeated_single_tool_share(&[], 10), None);
    }
}
