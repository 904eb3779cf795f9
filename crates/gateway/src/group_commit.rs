//! Saves grouped into one transaction (SQLite, saving behind the answers). SQLite writes one
//! transaction at a time, and each commit costs the same whatever it holds; one writer task
//! takes every save waiting when it is free and commits them together
//! (`RunStore::swap_journals_saving`). At one request at a time a group holds one save, so
//! nothing waits to be grouped; under load the saves that queued behind a commit share the next
//! one. Each save still learns whether its own swap happened (and redoes its part when another
//! request of its conversation saved first, as alone).

use std::sync::{Arc, OnceLock};

use looprail_journal::{JournalSwap, SharedStore};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

/// The most saves in one transaction.
const MAX_GROUP: usize = 64;

/// What a save learns: whether its swap happened (or why nothing could be written), and its
/// document back.
pub(crate) type Outcome = (Result<bool, String>, Value);

/// One save waiting for the writer.
struct Waiting {
    key: String,
    expected: Option<Arc<Value>>,
    body: Value,
    entries: Vec<(String, Value)>,
    done: oneshot::Sender<Outcome>,
}

/// The saves' writer: started with the first save, ended when the gateway is dropped (after
/// the saves already queued).
pub(crate) struct GroupCommit {
    store: SharedStore,
    queue: OnceLock<mpsc::UnboundedSender<Waiting>>,
}

impl std::fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit").finish_non_exhaustive()
    }
}

impl GroupCommit {
    /// A writer to `store`.
    pub(crate) fn new(store: SharedStore) -> Self {
        Self { store, queue: OnceLock::new() }
    }

    /// Swaps `key` from `expected` to `body` and stores `entries`, with whatever other saves
    /// are waiting (see `RunStore::swap_journal_saving`).
    pub(crate) async fn swap(
        &self,
        key: String,
        expected: Option<Arc<Value>>,
        body: Value,
        entries: Vec<(String, Value)>,
    ) -> Outcome {
        let queue = self.queue.get_or_init(|| {
            let (queue, waiting) = mpsc::unbounded_channel();
            tokio::spawn(write(Arc::clone(&self.store), waiting));
            queue
        });
        let (done, outcome) = oneshot::channel();
        if let Err(refused) = queue.send(Waiting { key, expected, body, entries, done }) {
            return (Err("the store's writer has stopped".to_owned()), refused.0.body);
        }
        outcome.await.unwrap_or_else(|_| (Err("the store's writer has stopped".to_owned()), Value::Null))
    }
}

/// The writer: every save waiting, in one call, until the queue closes.
async fn write(store: SharedStore, mut waiting: mpsc::UnboundedReceiver<Waiting>) {
    let mut group = Vec::with_capacity(MAX_GROUP);
    while waiting.recv_many(&mut group, MAX_GROUP).await > 0 {
        let swaps: Vec<JournalSwap<'_>> = group
            .iter()
            .map(|w: &Waiting| JournalSwap {
                key: &w.key,
                expected: w.expected.as_deref(),
                body: &w.body,
                entries: &w.entries,
            })
            .collect();
        let written = store.swap_journals_saving(&swaps).await;
        drop(swaps);
        match written {
            Ok(swapped) => {
                for (save, swapped) in group.drain(..).zip(swapped) {
                    let _ = save.done.send((Ok(swapped), save.body));
                }
            }
            Err(e) => {
                let error = e.to_string();
                for save in group.drain(..) {
                    let _ = save.done.send((Err(error.clone()), save.body));
                }
            }
        }
    }
}
