//! [`MemoCounter`]: a token counter that remembers what it counted, so a message counted again
//! (by a ledger after a rewrite, by a second pass over the same conversation) costs a hash,
//! not a BPE pass.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use foldhash::fast::FixedState;
use foldhash::quality::RandomState;
use looprail_loop_core::context::TokenCounter;
use looprail_loop_core::message::{ContentPart, Message};

/// Wraps a counter with a cache of message counts keyed by the message's content (role,
/// text, calls, results, images). Counts are exactly the inner counter's.
///
/// ```
/// use std::sync::Arc;
/// use looprail_compaction::{MemoCounter, TiktokenCounter};
/// use looprail_loop_core::context::TokenCounter;
/// use looprail_loop_core::message::Message;
///
/// let memo = MemoCounter::new(Arc::new(TiktokenCounter::default()));
/// let message = Message::user("hello world");
/// assert_eq!(memo.count_message(&message), TiktokenCounter::default().count_message(&message));
/// assert_eq!(memo.count_message(&message), 5);
/// assert_eq!(memo.cached(), 1);
/// ```
pub struct MemoCounter {
    inner: Arc<dyn TokenCounter>,
    cache: Mutex<HashMap<u64, u64, FixedState>>,
    /// Keys messages: foldhash's quality hasher, seeded per counter (a log cannot aim at a
    /// collision it does not know the seed of), at a fraction of SipHash's cost per byte.
    keys: RandomState,
}

impl std::fmt::Debug for MemoCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoCounter").field("cached", &self.cached()).finish()
    }
}

impl MemoCounter {
    /// A cache in front of `inner`.
    pub fn new(inner: Arc<dyn TokenCounter>) -> Self {
        Self { inner, cache: Mutex::new(HashMap::default()), keys: RandomState::default() }
    }

    /// How many distinct messages are cached.
    pub fn cached(&self) -> usize {
        self.cache.lock().map_or(0, |c| c.len())
    }
}

/// A 64-bit key of everything a message's count depends on.
fn key(keys: &RandomState, message: &Message) -> u64 {
    let mut h = keys.build_hasher();
    std::mem::discriminant(&message.role).hash(&mut h);
    for part in &message.content {
        match part {
            ContentPart::Text { text } => (0u8, text).hash(&mut h),
            ContentPart::ToolUse(call) => (1u8, &call.name, &call.arguments).hash(&mut h),
            ContentPart::ToolResult(result) => (2u8, &result.content).hash(&mut h),
            ContentPart::Image { media_type, source } => (3u8, media_type, source).hash(&mut h),
        }
    }
    h.finish()
}

impl TokenCounter for MemoCounter {
    fn count_message(&self, message: &Message) -> u64 {
        let key = key(&self.keys, message);
        if let Some(n) = self.cache.lock().ok().and_then(|c| c.get(&key).copied()) {
            return n;
        }
        let n = self.inner.count_message(message);
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(key, n);
        }
        n
    }

    fn count_text(&self, text: &str) -> u64 {
        self.inner.count_text(text)
    }
}
