//! Simple compaction: keep the first message and the last N, with a marker (F26).

use looprail_loop_core::config::ConfigError;
use looprail_loop_core::context::{ContextPolicy, ContextStep, ContextView};
use looprail_loop_core::event::Event;
use looprail_loop_core::guard::Decision;
use looprail_loop_core::message::Message;

use crate::counter::TiktokenCounter;
use crate::ledger::TokenLedger;
use crate::pairs::tail_start;

/// The tag of the marker that replaces removed messages.
pub const MARKER_TAG: &str = "compaction_marker";

/// When the conversation is over `budget_tokens`, keeps the first message (the system prompt,
/// or the first user message) and the last `keep_last` messages (more if needed so no tool
/// result loses its call), with a marker saying how many were removed in between.
#[derive(Debug, Clone)]
pub struct KeepEnds {
    keep_last: usize,
    budget: u64,
    counter: TiktokenCounter,
    ledger: TokenLedger,
}

impl KeepEnds {
    /// Keeps the first message and the last `keep_last` once over `budget_tokens`.
    /// `keep_last` must be at least 1 (the error names the key `keep_last`).
    pub fn new(keep_last: usize, budget_tokens: u64) -> Result<Self, ConfigError> {
        if keep_last == 0 {
            return Err(ConfigError::new("keep_last", "must be at least 1"));
        }
        Ok(Self {
            keep_last,
            budget: budget_tokens,
            counter: TiktokenCounter::default(),
            ledger: TokenLedger::default(),
        })
    }

    fn compact(&mut self, messages: &mut Vec<Message>) -> Option<Decision> {
        let before = self.ledger.sync(messages, &self.counter);
        if before <= self.budget || messages.len() <= self.keep_last + 1 {
            return None;
        }
        let first_kept = usize::from(!messages.is_empty());
        let start = tail_start(messages, self.keep_last).max(first_kept);
        if start <= first_kept {
            return None;
        }
        let before_messages = messages.len() as u64;
        let removed = start - first_kept;
        let marker = Message::internal_user(
            MARKER_TAG,
            format!("[{removed} earlier messages were removed to fit the context window]"),
        );
        // `tail_start` never starts the tail on a tool result, so no result loses its call.
        let tail = messages.split_off(start);
        messages.truncate(first_kept);
        messages.push(marker);
        messages.extend(tail);
        let after = self.ledger.recount(messages, &self.counter);
        Some(Decision::Emit(Event::CompactionRun {
            before_tokens: before,
            after_tokens: after,
            before_messages,
            after_messages: messages.len() as u64,
        }))
    }
}

impl ContextPolicy for KeepEnds {
    fn prepare(&mut self, messages: &mut Vec<Message>, _view: &ContextView<'_>) -> ContextStep {
        ContextStep::Ready(self.compact(messages).into_iter().collect())
    }

    fn on_overflow(&mut self, messages: &mut Vec<Message>, _view: &ContextView<'_>) -> ContextStep {
        let budget = self.budget;
        self.budget = 0; // force it
        let decision = self.compact(messages);
        self.budget = budget;
        ContextStep::Ready(decision.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use looprail_loop_core::config::LoopConfig;
    use looprail_loop_core::guard::Counters;

    #[test]
    fn keeps_the_first_message_a_marker_and_exactly_the_last_n() {
        assert_eq!(KeepEnds::new(0, 10).unwrap_err().key, "keep_last");
        let mut messages: Vec<Message> = (0..12)
            .map(|i| {
                if i % 2 == 0 {
                    Message::user(format!("question {i}"))
                } else {
                    Message::assistant(format!("answer {i}"))
                }
            })
            .collect();
        let original = messages.clone();
        let (counters, config) = (Counters::default(), LoopConfig::default());
        let view = ContextView::new(&counters, &config);
        KeepEnds::new(3, 1).unwrap().prepare(&mut messages, &view);
        assert_eq!(messages.len(), 1 + 1 + 3);
        assert_eq!(messages[0], original[0]);
        assert_eq!(messages[1].internal.as_ref().unwrap().reason, MARKER_TAG);
        assert_eq!(
            messages[1].joined_text().unwrap(),
            "[8 earlier messages were removed to fit the context window]"
        );
        assert_eq!(messages[2..], original[9..]);
    }
}
