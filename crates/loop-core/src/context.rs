//! The context seams: [`TokenCounter`] counts tokens, [`ContextPolicy`] keeps, trims or
//! compacts the conversation before each model call. The compaction crate implements both;
//! [`KeepAll`] is the policy that does nothing.

use crate::guard::{Decision, GuardStateError};
use crate::message::Message;

/// Counts tokens.
pub trait TokenCounter: Send + Sync {
    /// Tokens of one message, framing included.
    fn count_message(&self, message: &Message) -> u64;

    /// Tokens of a piece of text.
    fn count_text(&self, text: &str) -> u64;
}

/// What the context policy sees besides the messages it may rewrite.
#[derive(Debug, Clone, Copy)]
pub struct ContextView<'a> {
    /// The engine's counters.
    pub counters: &'a crate::guard::Counters,
    /// The loop configuration.
    pub config: &'a crate::config::LoopConfig,
}

/// Keeps the conversation within the model's context before each model call.
pub trait ContextPolicy: Send {
    /// May rewrite `messages` in place (it must keep the system prompt and never split a tool
    /// call from its result) and returns decisions, such as events or a forced `ask_human`.
    fn prepare(&mut self, messages: &mut Vec<Message>, view: &ContextView<'_>) -> Vec<Decision>;

    /// A new user turn started: reset per-turn counters here.
    fn on_user_turn(&mut self) {}

    /// State saved with the run.
    fn save_state(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// Restores [`ContextPolicy::save_state`]'s output.
    fn load_state(&mut self, _state: serde_json::Value) -> Result<(), GuardStateError> {
        Ok(())
    }
}

/// The policy that never changes the conversation.
#[derive(Debug, Clone, Copy, Default)]
pub struct KeepAll;

impl ContextPolicy for KeepAll {
    fn prepare(&mut self, _messages: &mut Vec<Message>, _view: &ContextView<'_>) -> Vec<Decision> {
        Vec::new()
    }
}
