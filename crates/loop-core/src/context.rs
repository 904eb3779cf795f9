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
use crate::message::{ContentPart, Message};
use crate::provider::{ModelResponse, Usage};

/// Framing tokens counted per message by the rough estimate.
const ROUGH_FRAMING: u64 = 4;

fn rough_text_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// Tokens the rough estimate gives an image (a typical tile cost).
const ROUGH_IMAGE: u64 = 765;

/// About four characters a token, plus framing: the estimate when no tokenizer is at hand.
pub fn rough_message_tokens(message: &Message) -> u64 {
    let parts: u64 = message
        .content
        .iter()
        .map(|part| match part {
            ContentPart::Text { text } => rough_text_tokens(text),
            ContentPart::ToolUse(call) => rough_text_tokens(&call.name) + rough_text_tokens(&call.arguments),
            ContentPart::ToolResult(result) => rough_text_tokens(&result.content),
            ContentPart::Image { .. } => ROUGH_IMAGE,
        })
        .sum();
    ROUGH_FRAMING + parts
}

fn rough_reply_tokens(reply: &ModelResponse) -> u64 {
    reply.text.as_deref().map_or(0, rough_text_tokens)
        + reply
            .tool_calls
            .iter()
            .map(|c| rough_text_tokens(&c.name) + rough_text_tokens(&c.arguments))
            .sum::<u64>()
}

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
    /// Messages the guards keep right after a history summary ([`Guard::after_summary`]);
    /// a policy that writes a summary places them there, replacing those with the same tags.
    ///
    /// [`Guard::after_summary`]: crate::guard::Guard::after_summary
    pub pinned: &'a [crate::message::Message],
}

impl<'a> ContextView<'a> {
    /// A view with nothing pinned after a summary.
    pub fn new(counters: &'a crate::guard::Counters, config: &'a crate::config::LoopConfig) -> Self {
        Self { counters, config, pinned: &[] }
    }
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

    /// Estimates a call's usage when the provider reported none (some OpenAI-compatible
    /// servers do not), so token budgets keep counting. `sent` is what the call was given: the
    /// conversation for a turn or fallback call, the part being summarised for a summary call
    /// (asked while a summary is pending). The default counts about four characters a token,
    /// over the whole of `sent`; a policy with a real token counter and a cache of per-message
    /// counts does better, in the time of the messages added since its last count.
    fn estimate_usage(&mut self, sent: &[Message], reply: &ModelResponse) -> Usage {
        let input = sent.iter().map(rough_message_tokens).sum();
        Usage::estimate(input, rough_reply_tokens(reply))
    }

    /// State saved with the run.
    fn save_state(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// Restores [`ContextPolicy::save_state`]'s output.
    fn load_state(&mut self, _state: serde_json::Value) -> Result<(), GuardStateError> {
        Ok(())
    }
}

/// The policy that never changes the conversation. When the provider reports no usage, its
/// estimate counts only the messages added since its last count: the conversation it never
/// changes only grows, so a turn costs the time of its new messages, not of the history.
#[derive(Debug, Clone, Copy, Default)]
pub struct KeepAll {
    /// Messages of the conversation counted so far, and their estimate.
    counted: usize,
    input: u64,
    /// Messages counted over the policy's life (what a recount each turn would make grow
    /// with the square of the conversation's length).
    work: u64,
}

impl ContextPolicy for KeepAll {
    fn prepare(&mut self, _messages: &mut Vec<Message>, _view: &ContextView<'_>) -> ContextStep {
        ContextStep::ready()
    }

    fn estimate_usage(&mut self, sent: &[Message], reply: &ModelResponse) -> Usage {
        if sent.len() < self.counted {
            // Not the conversation counted so far (it never shrinks): counted from the start.
            (self.counted, self.input) = (0, 0);
        }
        let new = &sent[self.counted..];
        self.input += new.iter().map(rough_message_tokens).sum::<u64>();
        self.work += new.len() as u64;
        self.counted = sent.len();
        Usage::estimate(self.input, rough_reply_tokens(reply))
    }
}

/// The size of the context as a recorded conversation is walked message by message: every
/// message so far, except that a history summary
/// ([`Message::is_history_summary`]) replaces all before it but the system messages, as a
/// compaction (looprail's or the recorded agent's own) did.
///
/// ```
/// use looprail_loop_core::context::LoggedContext;
/// use looprail_loop_core::message::{HISTORY_SUMMARY, Message};
///
/// let mut context = LoggedContext::default();
/// context.push(&Message::system("You fix bugs."), 10);
/// context.push(&Message::user("Fix the build."), 50);
/// assert_eq!(context.tokens(), 60);
/// context.push(&Message::internal_user(HISTORY_SUMMARY, "So far: ..."), 5);
/// assert_eq!(context.tokens(), 15, "the system prompt stays, the user message went");
/// assert_eq!(context.peak(), 60);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct LoggedContext {
    tokens: u64,
    system: u64,
    peak: u64,
}

impl LoggedContext {
    /// Adds the next message, of `tokens` tokens.
    pub fn push(&mut self, message: &Message, tokens: u64) {
        if message.is_history_summary() {
            self.tokens = self.system;
        }
        if message.role == crate::message::Role::System {
            self.system += tokens;
        }
        self.tokens += tokens;
        self.peak = self.peak.max(self.tokens);
    }

    /// The context's size now.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// Its largest size so far.
    pub fn peak(&self) -> u64 {
        self.peak
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_all_estimates_each_turn_in_the_time_of_its_new_messages() {
        let mut policy = KeepAll::default();
        let reply = ModelResponse::text("m", "ok");
        let mut conversation = vec![Message::system("You are terse."), Message::user("go")];
        for turn in 0..200 {
            conversation.push(Message::assistant(format!("step {turn}")));
            conversation.push(Message::user(format!("result {turn}: {}", "data ".repeat(turn % 7))));
            let usage = policy.estimate_usage(&conversation, &reply);
            let whole: u64 = conversation.iter().map(rough_message_tokens).sum();
            assert_eq!(usage.input_tokens, whole, "the same figure as a recount");
        }
        // 402 messages counted once each, not 200 recounts of a growing history (~40,000).
        assert_eq!(policy.work, conversation.len() as u64);
        // Another conversation, shorter: counted from its start.
        let other = [Message::user("hello")];
        assert_eq!(policy.estimate_usage(&other, &reply).input_tokens, rough_message_tokens(&other[0]));
    }
}
