//! When a conversation's state is saved: before its answer goes out, or after.
//!
//! A store that replicas share (PostgreSQL) must hold a conversation's state before the client
//! has the answer: the client's next request may reach another replica, which knows the
//! conversation only from the store. A store this gateway alone uses (SQLite, one process)
//! needs no such wait: the answer goes out first and the save runs behind it
//! ([`SaveOrder::AfterAnswer`]). What keeps that exact:
//!
//! - a request of a conversation whose save is still running waits for it before reading the
//!   state ([`WriteBehind::settled`]), so the guards never judge a step on a state that misses
//!   the one before; a key a running save writes (a history's fingerprint, a response's link)
//!   names its conversation meanwhile ([`WriteBehind::pending_conversation`]);
//! - one conversation's saves run one at a time ([`Ticket::turn`]), and the state the last one
//!   wrote is kept in memory (for up to [`STATES_KEPT`] conversations), so the next request
//!   reads no store at all;
//! - the gateway's shutdown waits for every running save ([`WriteBehind::drain`]).
//!
//! A gateway killed outright (not stopped) may lose the saves of its last few answers: the
//! conversation then goes on from the state before, and its next request's guards observe the
//! lost step's messages again (the history carries them), so its calls and turns are counted.
//! Its reply's token usage is not in the history: the tokens of those last answers are missing
//! from the conversation's budget (use `save_order = "before_answer"` where that matters).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use looprail_loop_core::json_text::json_text;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::task::TaskTracker;

use crate::conversation::{ConversationState, Stack};
use crate::newest_kept::NewestKept;

/// When a conversation's state is saved relative to its answer
/// ([`GatewayConfig::save_order`](crate::GatewayConfig::save_order)). Saved after the answer,
/// a conversation's next request still waits for that save before it reads the state, so the
/// guards judge every step as when saving first; the gateway's shutdown waits for the saves
/// still running.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SaveOrder {
    /// After the answer on a SQLite store, before it on PostgreSQL (the default).
    #[default]
    Auto,
    /// Saved before the answer goes out: another replica on the same store sees it at once.
    BeforeAnswer,
    /// Saved after the answer goes out, by a task this process waits for; only for a store no
    /// other gateway process writes.
    AfterAnswer,
}

impl SaveOrder {
    /// The order used on a store of `backend` (`sqlite`, `postgres`): [`SaveOrder::Auto`]
    /// saves after the answer only on SQLite.
    pub fn on(self, backend: &str) -> SaveOrder {
        match self {
            SaveOrder::Auto if backend == "sqlite" => SaveOrder::AfterAnswer,
            SaveOrder::Auto => SaveOrder::BeforeAnswer,
            order => order,
        }
    }
}

/// How many conversations' last saved states are kept in memory (after-answer saves only).
pub(crate) const STATES_KEPT: usize = 1024;

/// The largest state document kept in memory, in bytes of its JSON; a larger one (a Responses
/// conversation keeping big reply items) is read from the store.
const STATE_KEPT_BYTES: usize = 64 * 1024;

/// What a save leaves in memory: the state it wrote, as the document it wrote, and the live
/// guard stack that state's guards came from, when the save wrote the request's own state (not
/// one merged with another request's).
pub(crate) type Kept = (ConversationState, Arc<Value>, Option<Stack>);

/// The saves that run after their answers, and the states they wrote.
pub(crate) struct WriteBehind {
    order: SaveOrder,
    inflight: Arc<Mutex<Inflight>>,
    states: Mutex<NewestKept<String, Kept>>,
    tracker: TaskTracker,
}

impl std::fmt::Debug for WriteBehind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBehind").field("order", &self.order).finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct Inflight {
    conversations: HashMap<String, Running>,
    /// The store keys running saves write, each with its conversation.
    keys: HashMap<String, String>,
}

#[derive(Debug)]
struct Running {
    count: usize,
    settled: Arc<Notify>,
    turn: Arc<tokio::sync::Mutex<()>>,
}

impl WriteBehind {
    /// Saves in `order` (already resolved for the store: not [`SaveOrder::Auto`]).
    pub(crate) fn new(order: SaveOrder) -> Self {
        Self {
            order,
            inflight: Arc::default(),
            states: Mutex::new(NewestKept::new(STATES_KEPT)),
            tracker: TaskTracker::new(),
        }
    }

    /// Whether saves run after their answers.
    pub(crate) fn after_answer(&self) -> bool {
        self.order == SaveOrder::AfterAnswer
    }

    /// Marks a save of conversation `id`, writing `keys`, as running until the ticket drops.
    pub(crate) fn begin(&self, id: &str, keys: Vec<String>) -> Ticket {
        let mut inflight = self.inflight.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let running = inflight.conversations.entry(id.to_owned()).or_insert_with(|| Running {
            count: 0,
            settled: Arc::new(Notify::new()),
            turn: Arc::new(tokio::sync::Mutex::new(())),
        });
        running.count += 1;
        let turn = Arc::clone(&running.turn);
        for key in &keys {
            inflight.keys.insert(key.clone(), id.to_owned());
        }
        Ticket { inflight: Arc::clone(&self.inflight), id: id.to_owned(), keys, turn }
    }

    /// Runs `save` behind the answer; [`WriteBehind::drain`] waits for it.
    pub(crate) fn spawn(&self, save: impl std::future::Future<Output = ()> + Send + 'static) {
        self.tracker.spawn(save);
    }

    /// Returns once no save of conversation `id` is running.
    pub(crate) async fn settled(&self, id: &str) {
        let settled;
        let notified;
        {
            let inflight = self.inflight.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let Some(running) = inflight.conversations.get(id) else { return };
            settled = Arc::clone(&running.settled);
            // Made while the lock is held: the last ticket's wake-up, under the same lock,
            // cannot come before it.
            notified = settled.notified();
        }
        notified.await;
    }

    /// The conversation whose running save writes store key `key`.
    pub(crate) fn pending_conversation(&self, key: &str) -> Option<String> {
        let inflight = self.inflight.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        inflight.keys.get(key).cloned()
    }

    /// The state conversation `id`'s last save wrote, with its document, when kept: taken, not
    /// copied (the request's save keeps the state it writes; a request of the same conversation
    /// meanwhile reads the store, which holds the same).
    pub(crate) fn take_state(&self, id: &str) -> Option<Kept> {
        let mut states = self.states.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        states.take(id)
    }

    /// Keeps `state`, just written as `document` (after-answer saves only; a document past
    /// the size kept is dropped instead; past [`STATES_KEPT`], the state written longest ago
    /// goes).
    pub(crate) fn wrote(&self, mut state: ConversationState, document: Value, stack: Option<Stack>) {
        if !self.after_answer() {
            return;
        }
        if stack.is_some() {
            // The next request goes on with the live stack; the guard states written from it
            // are in the document. Dropped here, in the save, not on that request's path.
            state.guards.clear();
        }
        let mut states = self.states.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !state.reply_items.is_empty() && json_text(&document).len() > STATE_KEPT_BYTES {
            states.take(&state.id);
            return;
        }
        states.keep(state.id.clone(), (state, Arc::new(document), stack));
    }

    /// Drops what is kept of conversation `id` (its save failed: the store is the truth).
    pub(crate) fn forget(&self, id: &str) {
        let mut states = self.states.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        states.take(id);
    }

    /// Waits for every running save (the gateway is stopping).
    pub(crate) async fn drain(&self) {
        self.tracker.close();
        self.tracker.wait().await;
    }
}

/// A running save of one conversation: it holds the conversation's turn while it writes, and
/// when dropped lets the requests waiting for it go on.
#[derive(Debug)]
pub(crate) struct Ticket {
    inflight: Arc<Mutex<Inflight>>,
    id: String,
    keys: Vec<String>,
    turn: Arc<tokio::sync::Mutex<()>>,
}

impl Ticket {
    /// Waits until the conversation's earlier saves are done; its own runs while the guard
    /// is held.
    pub(crate) async fn turn(&self) -> tokio::sync::OwnedMutexGuard<()> {
        Arc::clone(&self.turn).lock_owned().await
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut inflight = self.inflight.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for key in &self.keys {
            if inflight.keys.get(key) == Some(&self.id) {
                inflight.keys.remove(key);
            }
        }
        if let Some(running) = inflight.conversations.get_mut(&self.id) {
            running.count -= 1;
            if running.count == 0 {
                let running = inflight.conversations.remove(&self.id);
                if let Some(running) = running {
                    running.settled.notify_waiters();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_saves_after_the_answer_only_on_a_store_one_process_uses() {
        assert_eq!(SaveOrder::Auto.on("sqlite"), SaveOrder::AfterAnswer);
        assert_eq!(SaveOrder::Auto.on("postgres"), SaveOrder::BeforeAnswer);
        assert_eq!(SaveOrder::BeforeAnswer.on("sqlite"), SaveOrder::BeforeAnswer);
        assert_eq!(SaveOrder::AfterAnswer.on("postgres"), SaveOrder::AfterAnswer);
    }

    #[tokio::test]
    async fn a_request_waits_for_every_running_save_of_its_conversation_and_no_other() {
        let saves = WriteBehind::new(SaveOrder::AfterAnswer);
        let first = saves.begin("c", vec!["gateway/prefix/1".into()]);
        let second = saves.begin("c", Vec::new());
        assert_eq!(saves.pending_conversation("gateway/prefix/1").as_deref(), Some("c"));
        saves.settled("other").await; // nothing of its own runs: no wait
        let waiting = tokio::spawn({
            let inflight = Arc::clone(&saves.inflight);
            async move {
                let saves = WriteBehind { inflight, ..WriteBehind::new(SaveOrder::AfterAnswer) };
                saves.settled("c").await;
            }
        });
        drop(first);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "one save of it still runs");
        assert_eq!(saves.pending_conversation("gateway/prefix/1"), None, "its keys are written");
        drop(second);
        waiting.await.unwrap();
    }
}
