//! The context seams: [`TokenCounter`] counts tokens, [`ContextPolicy`] keeps, trims or
//! compacts the conversation before each model call. The compaction crate implements both;
//! [`KeepAll`] is the policy that does nothing.
//!
//! A policy does no I/O. When it needs a summary written by a model, it returns
//! [`ContextStep::Summarize`]; the engine asks the driver for that call
//! ([`Action::Summarize`](crate::engine::Action::Summarize)) and hands the result (or the
//! failure) to [`ContextPolicy::apply_summary`].

use serde::{Deserialize, Serialize};

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

/// A summary the policy needs written before the next model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRequest {
    /// The messages to summarise.
    pub messages: Vec<Message>,
    /// What the summary must contain.
    pub instruction: String,
    /// A cap on the summary's length.
    pub max_output_tokens: Option<u32>,
}

/// The policy's answer before a model call.
#[derive(Debug, Clone, PartialEq)]
pub enum ContextStep {
    /// The conversation is ready (possibly rewritten); apply these decisions.
    Ready(Vec<Decision>),
    /// Write this summary first; the result goes to [`ContextPolicy::apply_summary`].
    Summarize {
        /// The summary call.
        request: SummaryRequest,
        /// Decisions to apply now (events, for instance).
        decisions: Vec<Decision>,
    },
}

impl ContextStep {
    /// Nothing to do.
    pub fn ready() -> Self {
        ContextStep::Ready(Vec::new())
    }
}

/// Keeps the conversation within the model's context before each model call.
pub trait ContextPolicy: Send {
    /// May rewrite `messages` in place (it must keep the system prompt and never split a tool
    /// call from its result), or ask for a summary.
    fn prepare(&mut self, messages: &mut Vec<Message>, view: &ContextView<'_>) -> ContextStep;

    /// Applies the summary asked for by [`ContextStep::Summarize`]; `Err` carries why it could
    /// not be written (failure, timeout), and the policy must then fall back to something
    /// deterministic.
    fn apply_summary(
        &mut self,
        _messages: &mut Vec<Message>,
        _summary: Result<String, String>,
        _view: &ContextView<'_>,
    ) -> Vec<Decision> {
        Vec::new()
    }

    /// The provider said the prompt does not fit: shrink now, whatever the threshold says. The
    /// engine then retries the call once.
    fn on_overflow(&mut self, _messages: &mut Vec<Message>, _view: &ContextView<'_>) -> ContextStep {
        ContextStep::ready()
    }

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
    fn prepare(&mut self, _messages: &mut Vec<Message>, _view: &ContextView<'_>) -> ContextStep {
        ContextStep::ready()
    }
}
