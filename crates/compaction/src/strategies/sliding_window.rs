//! Sliding-window trim to a token budget (F25).

use looprail_loop_core::context::{ContextPolicy, ContextStep, ContextView, TokenCounter};
use looprail_loop_core::event::Event;
use looprail_loop_core::guard::Decision;
use looprail_loop_core::message::{Message, Role};

use crate::counter::TiktokenCounter;
use crate::ledger::TokenLedger;
use crate::pairs::body_start;

/// Drops the oldest messages (after the system prompt) until the conversation fits
/// `budget_tokens`, a whole exchange at a time, so a tool call never loses its results. The last
/// exchange is always kept, even when it alone is over budget.
#[derive(Debug, Clone)]
pub struct SlidingWindow {
    budget: u64,
    counter: TiktokenCounter,
    ledger: TokenLedger,
}

impl SlidingWindow {
    /// Trims to `budget_tokens`.
    pub fn new(budget_tokens: u64) -> Self {
        Self { budget: budget_tokens, counter: TiktokenCounter::default(), ledger: TokenLedger::default() }
    }

    /// Trims `messages` now; returns the tokens before and after.
    pub fn trim(&mut self, messages: &mut Vec<Message>) -> (u64, u64) {
        let before = self.ledger.sync(messages, &self.counter);
        if before <= self.budget {
            return (before, before);
        }
        let body = body_start(messages);
        let mut drop_to = body;
        let mut total = before;
        // Exchanges start at a user or assistant message; tool results belong to the call before.
        while total > self.budget {
            let mut next = drop_to + 1;
            while next < messages.len() && messages[next].role == Role::Tool {
                next += 1;
            }
            if next >= messages.len() {
                break; // keep the last exchange
            }
            total -= self.ledger.sum(drop_to..next);
            drop_to = next;
        }
        messages.drain(body..drop_to);
        let after = self.ledger.recount(messages, &self.counter);
        (before, after)
    }
}

impl ContextPolicy for SlidingWindow {
    fn prepare(&mut self, messages: &mut Vec<Message>, _view: &ContextView<'_>) -> ContextStep {
        let before_messages = messages.len() as u64;
        let (before, after) = self.trim(messages);
        if before == after {
            return ContextStep::ready();
        }
        ContextStep::Ready(vec![Decision::Emit(Event::CompactionRun {
            before_tokens: before,
            after_tokens: after,
            before_messages,
            after_messages: messages.len() as u64,
        })])
    }

    fn on_overflow(&mut self, messages: &mut Vec<Message>, view: &ContextView<'_>) -> ContextStep {
        // The provider counts differently from our proxy: aim 20% lower this time.
        let budget = self.budget;
        self.budget = budget * 4 / 5;
        let step = self.prepare(messages, view);
        self.budget = budget;
        step
    }
}

impl SlidingWindow {
    /// The counter's view of the current total (for tests and tuning).
    pub fn count(&mut self, messages: &[Message]) -> u64 {
        self.ledger.sync(messages, &self.counter)
    }

    /// The counter in use.
    pub fn counter(&self) -> &dyn TokenCounter {
        &self.counter
    }
}
