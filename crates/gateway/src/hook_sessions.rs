//! The hook endpoint's sessions kept in memory, for a store this gateway alone writes (SQLite,
//! saving after the answer, as conversations are; see `write_behind`): an event is decided on
//! the session's state in memory and answered at once, and the state is written behind the
//! answer (20 ms after it), one session's writes in order, the newest state only when several
//! wait. A session
//! not in memory is read from the store first. The gateway's shutdown waits for the writes.
//!
//! Sessions stay in memory up to [`SESSIONS_KEPT`]; past that, idle ones (no event deciding,
//! no write running) are dropped, to be read from the store again when they come back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use looprail_hook::session::SessionState;
use looprail_journal::SharedStore;
use serde_json::Value;

/// How many sessions are kept in memory before idle ones are dropped.
pub(crate) const SESSIONS_KEPT: usize = 4096;

/// How long a session's state waits before it is written: the events of one burst (a call's
/// `PreToolUse` and `PostToolUse` of a quick tool, a stretch's start) become one write, made
/// while the agent runs its tool rather than while it waits for an answer.
const WRITE_AFTER: std::time::Duration = std::time::Duration::from_millis(20);

/// One session: its state as decided, and what the store holds of it.
#[derive(Default)]
pub(crate) struct Session {
    /// The state after the last event (`None`: not read from the store yet).
    pub(crate) state: Option<SessionState>,
    /// The document the store holds, as last read or written (the swap's expected value).
    written: Option<Value>,
    /// The newest document waiting to be written.
    pending: Option<Value>,
    /// A writer task is running for this session.
    writing: bool,
}

/// The sessions, by store key.
#[derive(Default)]
pub(crate) struct HookSessions {
    sessions: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Session>>>>,
}

impl HookSessions {
    /// The session of `key`, to lock while an event is decided (events of one session are
    /// decided one at a time).
    pub(crate) fn session(&self, key: &str) -> Arc<tokio::sync::Mutex<Session>> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        if sessions.len() >= SESSIONS_KEPT && !sessions.contains_key(key) {
            // Only the map holds an idle session: nobody can take it while the map is locked.
            sessions.retain(|_, session| Arc::strong_count(session) > 1);
        }
        Arc::clone(sessions.entry(key.to_owned()).or_default())
    }

    /// How many sessions are in memory.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

impl Session {
    /// Reads the state from `store` when it is not in memory yet.
    pub(crate) async fn load(&mut self, store: &SharedStore, key: &str) -> Result<(), String> {
        if self.state.is_none() {
            let stored = store.load_journal(key).await.map_err(|e| e.to_string())?;
            let state = stored.as_ref().and_then(|v| serde_json::from_value(v.clone()).ok());
            self.state = Some(state.unwrap_or_default());
            self.written = stored;
        }
        Ok(())
    }

    /// Queues `document` (the state just decided) to be written; true when the caller must start
    /// the writer ([`write_behind`]).
    pub(crate) fn queue(&mut self, document: Value) -> bool {
        self.pending = Some(document);
        !std::mem::replace(&mut self.writing, true)
    }
}

/// Writes `session`'s queued documents to `store` until none waits. A document the store holds
/// differently (another process wrote the session) is written over it; a store that fails keeps
/// the state in memory, written with the session's next event.
pub(crate) async fn write_behind(store: SharedStore, key: String, session: Arc<tokio::sync::Mutex<Session>>) {
    loop {
        tokio::time::sleep(WRITE_AFTER).await;
        let (document, expected) = {
            let mut slot = session.lock().await;
            match slot.pending.take() {
                Some(document) => (document, slot.written.clone()),
                None => {
                    slot.writing = false;
                    return;
                }
            }
        };
        let written = match store.swap_journal(&key, expected.as_ref(), &document).await {
            Ok(true) => Some(document),
            Ok(false) => {
                tracing::warn!(name: "gateway.hook.overwritten", target: "looprail", key = %key,
                    "gateway: a hook session changed in the store under this gateway; its state here wins");
                let now = store.load_journal(&key).await.ok().flatten();
                match store.swap_journal(&key, now.as_ref(), &document).await {
                    Ok(true) => Some(document),
                    _ => now,
                }
            }
            Err(e) => {
                tracing::warn!(name: "gateway.hook.unsaved", target: "looprail", key = %key, error = %e,
                    "gateway: a hook session's state could not be written; kept in memory");
                let mut slot = session.lock().await;
                slot.pending.get_or_insert(document);
                slot.writing = false;
                return;
            }
        };
        session.lock().await.written = written;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_sessions_go_when_too_many_and_busy_ones_stay() {
        let sessions = HookSessions::default();
        let busy = sessions.session("busy");
        for n in 0..SESSIONS_KEPT - 1 {
            drop(sessions.session(&format!("idle-{n}")));
        }
        assert_eq!(sessions.len(), SESSIONS_KEPT);
        drop(sessions.session("one more"));
        assert_eq!(sessions.len(), 2, "the idle ones went; the busy one and the new one stay");
        assert!(Arc::ptr_eq(&busy, &sessions.session("busy")), "a busy session is never replaced");
    }
}
