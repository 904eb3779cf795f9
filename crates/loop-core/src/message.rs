//! The provider-neutral message model: roles, content parts, tool calls and tool results.
//!
//! A conversation is a `Vec<Message>`. Tool calls live inside assistant messages as
//! [`ContentPart::ToolUse`]; each tool result is its own [`Role::Tool`] message holding one
//! [`ContentPart::ToolResult`] (the OpenAI shape; the Anthropic client regroups them).
//! Messages the runtime adds for its own purposes (continuation prompts, nudges, fallback
//! instructions) carry an [`InternalTag`] and are never shown to the user as user text.

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The system prompt.
    System,
    /// The human, or the runtime speaking on the human's side (then tagged internal).
    User,
    /// The model.
    Assistant,
    /// A tool's answer to one tool call.
    Tool,
}

/// One tool call requested by the model.
///
/// Providers do not guarantee unique ids (some OpenAI-compatible servers send `call_0` every
/// turn, or nothing), so a run does not trust them: the engine gives every call its own `id`,
/// unique in the run by construction (`lr-0`, `lr-1`, ...), which the idempotency envelope, the
/// journal, tools and tool results use; the provider's id is kept in `wire_id` and sent back on
/// the wire where it is usable (see [`WireIds`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's identity; tool results refer to it. Outside a run (a transcript, a fresh
    /// provider response) it is the provider's id.
    pub id: String,
    /// The tool's name as the model wrote it (it may name no registered tool).
    pub name: String,
    /// The arguments exactly as the model produced them: a JSON text that may be invalid.
    pub arguments: String,
    /// The id the provider gave this call, once the engine has assigned `id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire_id: Option<String>,
}

impl ToolCall {
    /// Builds a tool call from its parts.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self { id: id.into(), name: name.into(), arguments: arguments.into(), wire_id: None }
    }
}

/// The ids a request shows a provider: each call's provider id (`wire_id`) where it is
/// non-empty and not already used earlier in the same request, else the call's own `id`, so
/// every tool result in a request pairs with its own call even when the provider reused or
/// left out ids.
///
/// ```
/// use looprail_loop_core::message::{Message, ToolCall, ToolResult, WireIds};
///
/// let mut first = ToolCall::new("lr-0", "read", "{}");
/// first.wire_id = Some("call_0".into());
/// let mut second = ToolCall::new("lr-1", "read", "{}");
/// second.wire_id = Some("call_0".into()); // the server reused its id
/// let messages = vec![
///     Message::assistant_with_calls(None, vec![first]),
///     Message::tool_result(ToolResult::ok("lr-0", "a")),
///     Message::assistant_with_calls(None, vec![second]),
///     Message::tool_result(ToolResult::ok("lr-1", "b")),
/// ];
/// let ids = WireIds::for_messages(&messages);
/// assert_eq!(ids.get("lr-0"), "call_0");
/// assert_eq!(ids.get("lr-1"), "lr-1", "the clash is rewritten");
/// assert_eq!(ids.get("from-a-log"), "from-a-log", "unknown ids pass through");
/// ```
#[derive(Debug, Clone, Default)]
pub struct WireIds {
    by_id: std::collections::HashMap<String, String>,
}

impl WireIds {
    /// The wire id of every call in `messages`, in order.
    pub fn for_messages(messages: &[Message]) -> Self {
        let mut used: std::collections::HashSet<String> = std::collections::HashSet::new();
        let mut by_id = std::collections::HashMap::new();
        for call in messages.iter().flat_map(Message::tool_calls) {
            let preferred = call.wire_id.as_deref().filter(|w| !w.trim().is_empty()).unwrap_or(&call.id);
            let mut chosen =
                if preferred.trim().is_empty() { "call".to_owned() } else { preferred.to_owned() };
            if used.contains(&chosen) {
                chosen = call.id.clone();
            }
            let mut n = 1;
            while chosen.trim().is_empty() || used.contains(&chosen) {
                chosen = format!("{}-{n}", call.id);
                n += 1;
            }
            used.insert(chosen.clone());
            by_id.insert(call.id.clone(), chosen);
        }
        Self { by_id }
    }

    /// The wire id of the call whose id is `id` (`id` itself when the request has no such call).
    pub fn get<'a>(&'a self, id: &'a str) -> &'a str {
        self.by_id.get(id).map_or(id, String::as_str)
    }
}

/// The result of one tool call, as the model will see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the [`ToolCall`] this answers.
    pub call_id: String,
    /// The text the model sees.
    pub content: String,
    /// True when the call failed; providers forward this as their error flag.
    pub is_error: bool,
    /// A machine-readable marker for results the runtime made up instead of running the tool,
    /// such as `loop-detected`, `unknown-tool` or `invalid-arguments`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flag: Option<String>,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self { call_id: call_id.into(), content: content.into(), is_error: false, flag: None }
    }

    /// A failed result with the error text the model will read.
    pub fn error(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self { call_id: call_id.into(), content: content.into(), is_error: true, flag: None }
    }

    /// Sets the runtime marker ([`ToolResult::flag`]).
    #[must_use]
    pub fn with_flag(mut self, flag: impl Into<String>) -> Self {
        self.flag = Some(flag.into());
        self
    }
}

/// One part of a message's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call (assistant messages only).
    ToolUse(ToolCall),
    /// A tool result (tool messages only).
    ToolResult(ToolResult),
    /// An image, by URL or data URI; token counters estimate its cost.
    Image {
        /// MIME type such as `image/png`.
        media_type: String,
        /// An `https:` URL or a `data:` URI.
        source: String,
    },
}

/// The tag of a message that replaces the history before it with a summary (compaction's, or
/// a recorded agent's own): the context from it on is the system messages before it, it, and
/// what follows.
pub const HISTORY_SUMMARY: &str = "history_summary";

/// Why the runtime added a message; such messages are never shown as user text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InternalTag {
    /// A stable reason such as `max_tokens_recovery`, `fallback_instruction`, `loop_nudge`.
    pub reason: String,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its content, in order.
    pub content: Vec<ContentPart>,
    /// Set when the runtime, not a person or the model, wrote this message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal: Option<InternalTag>,
}

impl Message {
    /// A message of one text part.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self { role, content: vec![ContentPart::Text { text: text.into() }], internal: None }
    }

    /// A system prompt.
    pub fn system(text: impl Into<String>) -> Self {
        Self::text(Role::System, text)
    }

    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::text(Role::User, text)
    }

    /// An assistant message of text only.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::text(Role::Assistant, text)
    }

    /// An assistant message with optional text followed by tool calls.
    pub fn assistant_with_calls(text: Option<String>, calls: Vec<ToolCall>) -> Self {
        let mut content = Vec::with_capacity(calls.len() + 1);
        if let Some(text) = text.filter(|t| !t.is_empty()) {
            content.push(ContentPart::Text { text });
        }
        content.extend(calls.into_iter().map(ContentPart::ToolUse));
        Self { role: Role::Assistant, content, internal: None }
    }

    /// A tool message carrying one result.
    pub fn tool_result(result: ToolResult) -> Self {
        Self { role: Role::Tool, content: vec![ContentPart::ToolResult(result)], internal: None }
    }

    /// A runtime-authored user message, tagged so it is never shown as user text.
    pub fn internal_user(reason: impl Into<String>, text: impl Into<String>) -> Self {
        Self::user(text).tagged(reason)
    }

    /// Marks this message as runtime-authored with the given reason.
    #[must_use]
    pub fn tagged(mut self, reason: impl Into<String>) -> Self {
        self.internal = Some(InternalTag { reason: reason.into() });
        self
    }

    /// True when the runtime wrote this message.
    pub fn is_internal(&self) -> bool {
        self.internal.is_some()
    }

    /// True when this message summarises, and so replaces, the history before it
    /// ([`HISTORY_SUMMARY`]).
    ///
    /// ```
    /// use looprail_loop_core::message::{HISTORY_SUMMARY, Message};
    /// assert!(Message::internal_user(HISTORY_SUMMARY, "So far: ...").is_history_summary());
    /// assert!(!Message::user("So far: ...").is_history_summary());
    /// ```
    pub fn is_history_summary(&self) -> bool {
        self.internal.as_ref().is_some_and(|tag| tag.reason == HISTORY_SUMMARY)
    }

    /// The concatenated text parts, or `None` when there is no non-empty text.
    pub fn joined_text(&self) -> Option<String> {
        let mut out = String::new();
        for part in &self.content {
            if let ContentPart::Text { text } = part {
                out.push_str(text);
            }
        }
        (!out.is_empty()).then_some(out)
    }

    /// The tool calls of an assistant message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|p| match p {
            ContentPart::ToolUse(call) => Some(call),
            _ => None,
        })
    }

    /// The tool results of a tool message, in order.
    pub fn tool_results(&self) -> impl Iterator<Item = &ToolResult> {
        self.content.iter().filter_map(|p| match p {
            ContentPart::ToolResult(result) => Some(result),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assistant_with_calls_drops_empty_text_and_keeps_call_order() {
        let msg = Message::assistant_with_calls(
            Some(String::new()),
            vec![ToolCall::new("a", "read", "{}"), ToolCall::new("b", "list", "{}")],
        );
        assert_eq!(msg.content.len(), 2);
        let ids: Vec<_> = msg.tool_calls().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(msg.joined_text(), None);
    }

    #[test]
    fn internal_messages_round_trip_with_their_tag() {
        let msg = Message::internal_user("max_tokens_recovery", "Continue.");
        let json = serde_json::to_string(&msg).unwrap();
        let back: Message = serde_json::from_str(&json).unwrap();
        assert!(back.is_internal());
        assert_eq!(back, msg);
    }
}
