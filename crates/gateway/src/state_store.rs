//! A conversation's state in the store, shared by every replica: read with the exact document
//! it was read as, and written back only while that document is still there (optimistic
//! concurrency, `RunStore::swap_journal`). When another request of the same conversation (on
//! this replica or another) saved first, the state is read again and this request's part done
//! again on it: its new messages observed (those the other did not already observe), its reply's
//! tokens counted. No lock is held while the upstream answers, so parallel requests never wait
//! for each other; none loses its update.
//!
//! Why not a lock per conversation: a request holds its conversation for as long as the model
//! takes to answer (seconds to minutes); a lock would serialise a client's parallel requests
//! and strand a conversation whose replica died holding it.

use std::sync::Arc;

use serde_json::Value;

use crate::Gateway;
use crate::conversation::{ConversationState, Stack};
use crate::finish::Done;
use crate::identity;
use crate::write_behind::Kept;

/// How many times a save is tried against concurrent writers before it is given up (logged).
const SWAP_ATTEMPTS: u32 = 64;

impl Gateway {
    /// The state of conversation `id` as its last save left it, with its document and, when
    /// kept, its live guard stack; `None` when none is stored. Waits for a save of it still
    /// running; the state this process last wrote is read from memory when kept (see
    /// `write_behind`), else from the store. A store that cannot be read is an error (never a
    /// fresh start).
    pub(crate) async fn load_state(&self, id: &str) -> Result<Option<Kept>, looprail_journal::JournalError> {
        self.write_behind.settled(id).await;
        if let Some(kept) = self.write_behind.take_state(id) {
            return Ok(Some(kept));
        }
        Ok(self.read_state(id).await?.map(|(state, document)| (state, document, None)))
    }

    /// The stored state of conversation `id`, read from the store.
    async fn read_state(
        &self,
        id: &str,
    ) -> Result<Option<(ConversationState, Arc<Value>)>, looprail_journal::JournalError> {
        let Some(document) = self.store.load_journal(&identity::state_key(id)).await? else {
            return Ok(None);
        };
        let read = <ConversationState as serde::Deserialize>::deserialize(&document);
        let document = Arc::new(document);
        match read {
            Ok(state) => Ok(Some((state, document))),
            Err(e) => {
                // A row this version cannot read (a newer gateway wrote it): started over,
                // loudly; the swap still compares against the row as read.
                tracing::warn!(name: "gateway.state.unreadable", target: "looprail", conversation = %id, error = %e, "gateway: a stored conversation state could not be read; starting it over");
                Ok(Some((ConversationState { id: id.to_owned(), ..ConversationState::default() }, document)))
            }
        }
    }

    /// Stores `state` as the state `done` was read with, unless another request saved the
    /// conversation meanwhile: then this request's part is done again on what that one saved.
    /// `usage` is the reply's tokens (already counted in `state`); `beside` (the history's
    /// fingerprints, a response's link) is stored in the same statement as the first try;
    /// `stack` is the live guard stack `state`'s guards came from, kept in memory with the state
    /// when that state is the one written.
    pub(crate) async fn store_state(
        &self,
        done: &Done,
        state: ConversationState,
        usage: crate::conversation::Spent,
        mut beside: Vec<(String, Value)>,
        mut stack: Option<Stack>,
    ) {
        let id = state.id.clone();
        let key = identity::state_key(&id);
        let mut expected = done.stored.clone();
        let mut next = state;
        // The state as this request made it, kept once a swap fails (for the redo).
        let mut mine: Option<ConversationState> = None;
        for attempt in 0..SWAP_ATTEMPTS {
            // While the live stack is kept beside the state, the state needs no guard documents
            // of its own (`WriteBehind::wrote`): they are moved into the document, not copied.
            let body = document(&mut next, stack.is_some());
            let (swapped, body) = match (&self.group_commit, attempt) {
                // The first try goes with the other saves waiting (one transaction for all).
                (Some(group), 0) => {
                    group.swap(key.clone(), expected.clone(), body, std::mem::take(&mut beside)).await
                }
                (None, 0) => {
                    let swapped =
                        self.store.swap_journal_saving(&key, expected.as_deref(), &body, &beside).await;
                    (swapped.map_err(|e| e.to_string()), body)
                }
                _ => {
                    let swapped = self.store.swap_journal(&key, expected.as_deref(), &body).await;
                    (swapped.map_err(|e| e.to_string()), body)
                }
            };
            match swapped {
                Ok(true) => return self.write_behind.wrote(next, body, stack),
                Ok(false) => {}
                Err(e) => {
                    self.write_behind.forget(&id);
                    tracing::warn!(name: "gateway.store.unavailable", target: "looprail", conversation = %id, error = %e, "gateway: conversation state not saved");
                    return;
                }
            }
            // Another request saved first: its state, with this request's part done again.
            let latest = match self.read_state(&id).await {
                Ok(latest) => latest,
                Err(e) => {
                    self.write_behind.forget(&id);
                    tracing::warn!(name: "gateway.store.unavailable", target: "looprail", conversation = %id, error = %e, "gateway: conversation state not saved");
                    return;
                }
            };
            let (mut merged, document) = match latest {
                Some((merged, document)) => (merged, Some(document)),
                None => (ConversationState { id: id.clone(), ..ConversationState::default() }, None),
            };
            let original = mine.get_or_insert_with(|| std::mem::take(&mut next));
            // The state written now is another's merged with this one's: not the stack's.
            stack = None;
            self.redo(done, original, &mut merged, usage);
            next = merged;
            expected = document;
            if attempt > 2 {
                tokio::time::sleep(std::time::Duration::from_millis(u64::from(attempt.min(20)))).await;
            }
        }
        self.write_behind.forget(&id);
        tracing::warn!(name: "gateway.state.contended", target: "looprail", conversation = %id, "gateway: conversation state not saved after {SWAP_ATTEMPTS} concurrent updates");
    }

    /// Does this request's part again on `latest`: observes the new messages it does not hold
    /// yet, counts the reply, and keeps what only this request knows.
    fn redo(
        &self,
        done: &Done,
        mine: &ConversationState,
        latest: &mut ConversationState,
        usage: crate::conversation::Spent,
    ) {
        let now = looprail_journal::now_ms();
        if latest.seen < done.len {
            // Its history covers this request's start (or it was started over): the messages
            // past what it saw are observed.
            let skip =
                latest.seen.checked_sub(done.from).map_or(0, |k| done.starts.get(k).copied().unwrap_or(0));
            let new = done.new.get(skip..).unwrap_or_default();
            let _ = self.gate.observe_new(latest, new, done.len, &done.tools, now);
        } else {
            latest.requests += 1;
        }
        self.gate.replied(latest, usage);
        latest.degenerate_reply |= mine.degenerate_reply;
        latest.recorded = latest.recorded.max(mine.recorded);
        if latest.summary.as_ref().map_or(0, |s| s.upto) < mine.summary.as_ref().map_or(0, |s| s.upto) {
            latest.summary.clone_from(&mine.summary);
        }
        if !mine.reply_items.is_empty() {
            latest.reply_items.clone_from(&mine.reply_items);
        }
    }
}

/// The document `state` is stored as. With `move_guards`, its guards' documents are moved into
/// the document (leaving the state's empty) instead of copied: the same document either way.
fn document(state: &mut ConversationState, move_guards: bool) -> Value {
    if !move_guards {
        return serde_json::to_value(&*state).unwrap_or_default();
    }
    let guards = std::mem::take(&mut state.guards);
    let mut document = serde_json::to_value(&*state).unwrap_or_default();
    if let Some(slot) = document.get_mut("guards") {
        *slot = Value::Object(guards.into_iter().collect());
    }
    document
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A state with the given guard documents and a few other fields set.
    fn state_with(guards: Vec<(String, i64, String)>, seen: usize) -> ConversationState {
        let guards = guards
            .into_iter()
            .map(|(name, n, text)| (name, serde_json::json!({ "n": n, "text": text, "list": [n, null] })))
            .collect();
        ConversationState {
            id: "c-1".into(),
            guards,
            seen,
            recorded: seen,
            requests: 3,
            ..ConversationState::default()
        }
    }

    proptest! {
        /// Moving the guard documents in writes the very document copying them does, and the
        /// state it leaves reads back (guards aside) as the one given.
        #[test]
        fn moving_the_guards_in_stores_the_same_document(
            guards in proptest::collection::vec(("[a-z_]{1,12}", any::<i64>(), ".{0,16}"), 0..6),
            seen in 0usize..1_000,
        ) {
            let original = state_with(guards, seen);
            let copied = document(&mut original.clone(), false);
            let mut moved_from = original.clone();
            let moved = document(&mut moved_from, true);
            prop_assert_eq!(&moved, &copied);
            prop_assert_eq!(moved.to_string(), copied.to_string());
            prop_assert!(moved_from.guards.is_empty());
            prop_assert_eq!(ConversationState { guards: original.guards.clone(), ..moved_from }, original.clone());
            let read: ConversationState = serde_json::from_value(moved).unwrap();
            prop_assert_eq!(read, original);
        }
    }
}
