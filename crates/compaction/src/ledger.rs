//! Incremental token accounting (B6): per-message counts are cached, so a turn costs the
//! messages it added, not the whole history.

use looprail_loop_core::context::TokenCounter;
use looprail_loop_core::message::Message;

/// The cached count of a conversation.
///
/// Between two calls the conversation may only grow at the end (the engine appends); a policy
/// that rewrites it calls [`TokenLedger::recount`]. A conversation shorter than what was counted
/// (a rewrite the ledger was not told about) is recounted from scratch.
#[derive(Debug, Clone, Default)]
pub struct TokenLedger {
    counts: Vec<u64>,
    total: u64,
}

impl TokenLedger {
    /// Counts the messages added since the last call and returns the total.
    pub fn sync(&mut self, messages: &[Message], counter: &dyn TokenCounter) -> u64 {
        if messages.len() < self.counts.len() {
            return self.recount(messages, counter);
        }
        for message in &messages[self.counts.len()..] {
            let n = counter.count_message(message);
            self.counts.push(n);
            self.total += n;
        }
        self.total
    }

    /// Counts everything again (after a rewrite).
    pub fn recount(&mut self, messages: &[Message], counter: &dyn TokenCounter) -> u64 {
        self.counts.clear();
        self.total = 0;
        self.sync(messages, counter)
    }

    /// The total at the last sync.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The cached count of message `index`.
    pub fn count(&self, index: usize) -> Option<u64> {
        self.counts.get(index).copied()
    }

    /// Tokens of messages `range`.
    pub fn sum(&self, range: std::ops::Range<usize>) -> u64 {
        self.counts.get(range).map_or(0, |c| c.iter().sum())
    }
}
