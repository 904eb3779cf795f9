//! Saving what a request changed: the conversation's recording, its state, the fingerprints
//! its next request will be known by and a Responses reply's link — before the answer goes out
//! or behind it, as [`write_behind`](crate::write_behind) decides.

use std::sync::Arc;

use looprail_loop_core::message::Message;
use serde_json::Value;

use crate::Gateway;
use looprail_guardrails::saved_states;

use crate::conversation::{ConversationState, Stack};
use crate::finish::Done;
use crate::identity;
use crate::record;

/// What one request leaves to save.
pub(crate) struct Save {
    /// The request, as its state was read.
    pub(crate) done: Done,
    /// The state to store.
    pub(crate) state: ConversationState,
    /// The fingerprints the history the client now has will be known by.
    pub(crate) fingerprints: Vec<u64>,
    /// A response's link, under its key.
    pub(crate) kept: Option<(String, Value)>,
    /// The reply's tokens (already counted in `state`).
    pub(crate) usage: crate::conversation::Spent,
    /// What to append to the conversation's recording.
    pub(crate) record: Option<Recording>,
    /// The conversation's live guard stack after this request: its states go into `state`'s
    /// guards when it is saved, off the answer's path.
    pub(crate) stack: Option<Stack>,
}

/// What a request appends to its conversation's recording: the new messages not recorded yet
/// (from `skip` in the request's new messages, after the system prompt given apart when
/// `system`), then the reply.
pub(crate) struct Recording {
    pub(crate) skip: usize,
    pub(crate) system: bool,
    pub(crate) reply: Option<Message>,
    /// How many wire messages the recording then holds.
    pub(crate) recorded: usize,
}

impl Recording {
    /// The lines to append, read from `done` (which a conflicting save still reads).
    fn lines(&self, done: &Done) -> std::io::Result<Vec<u8>> {
        let system = done.system.iter().filter(|_| self.system);
        record::lines(system.chain(done.new.iter().skip(self.skip)).chain(&self.reply))
    }
}

impl Save {
    /// Only the state as it was read with the request's messages observed (no reply).
    pub(crate) fn state_only(mut done: Done) -> Self {
        let state = std::mem::take(&mut done.state);
        let stack = done.stack.take();
        Save {
            done,
            state,
            fingerprints: Vec::new(),
            kept: None,
            usage: Default::default(),
            record: None,
            stack,
        }
    }

    /// The keys of the documents it writes besides the state ([`Save::beside`]).
    fn keys(&self) -> Vec<String> {
        let fingerprints = self.fingerprints.iter().map(|f| identity::prefix_key(*f));
        fingerprints.chain(self.kept.iter().map(|(key, _)| key.clone())).collect()
    }

    /// The documents it writes besides the state, under their keys: the fingerprints (each
    /// naming the conversation) and the response's link.
    fn beside(&mut self) -> Vec<(String, Value)> {
        let id = &self.state.id;
        let mut beside: Vec<(String, Value)> = self
            .fingerprints
            .iter()
            .map(|f| (identity::prefix_key(*f), serde_json::json!({ "id": id })))
            .collect();
        beside.extend(self.kept.take());
        beside
    }
}

impl Gateway {
    /// Saves what a request changed: at once, or (saving after the answer) in a task its
    /// conversation's next request waits for. Either way this replica knows the fingerprints
    /// before it returns: remembered, or (until the task has remembered them) as the keys of
    /// a running save, which a request's recognition asks for too
    /// (`WriteBehind::pending_conversation`).
    pub(crate) async fn save(self: &Arc<Self>, save: Save) {
        if self.write_behind.after_answer() {
            let ticket = self.write_behind.begin(&save.state.id, save.keys());
            let gateway = Arc::clone(self);
            // The task is kept small (the save and the store's futures boxed): spawning copies
            // it whole, on the answer's path.
            let save = Box::new(save);
            self.write_behind.spawn(async move {
                gateway.remember(&save);
                let _turn = ticket.turn().await;
                Box::pin(gateway.persist(*save)).await;
                drop(ticket);
            });
        } else {
            self.remember(&save);
            // Boxed: the store's futures would otherwise make every request's future (moved
            // whole onto the heap per request) several kilobytes larger.
            Box::pin(self.persist(save)).await;
        }
    }

    /// Remembers the fingerprints as naming the conversation.
    fn remember(&self, save: &Save) {
        if !save.fingerprints.is_empty()
            && let Ok(mut recent) = self.recent.lock()
        {
            for fingerprint in &save.fingerprints {
                recent.keep(*fingerprint, save.state.id.clone());
            }
        }
    }

    /// Appends to the recording (without waiting for a file to be made: see `recorder`),
    /// then stores the state (swapped for the one the request was read with: see
    /// `state_store`) with the fingerprints and the link, in one statement. The state counts
    /// the lines as recorded; an append that fails is told to the recorder, and the
    /// conversation's next answer records from where it failed.
    async fn persist(&self, mut save: Save) {
        let beside = save.beside();
        let Save { done, mut state, usage, record, mut stack, .. } = save;
        if let Some(stack) = &mut stack {
            state.guards = saved_states(stack.guards());
        }
        if let (Some(recorder), Some(record)) = (&self.recorder, record) {
            match record.lines(&done) {
                Ok(lines) => {
                    let before = std::mem::replace(&mut state.recorded, record.recorded);
                    recorder.append(&state.id, lines, before).await;
                }
                Err(e) => {
                    tracing::warn!(conversation = %state.id, error = %e, "gateway: conversation not recorded")
                }
            }
        }
        self.store_state(&done, state, usage, beside, stack).await;
    }
}
