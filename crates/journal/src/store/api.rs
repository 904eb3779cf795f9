//! [`RunStore`]: the one interface of the run store, implemented by [`SqliteStore`] (embedded,
//! one file) and [`PostgresStore`] (many workers on many hosts); both pass one conformance
//! suite (`crates/journal/tests/conformance`).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use looprail_loop_core::engine::RunHeader;
use looprail_loop_core::message::{Message, ToolCall, ToolResult};
use looprail_loop_core::outcome::Outcome;
use looprail_loop_core::store::{CheckpointKind, CheckpointStore, StoreError, StoredCheckpoint};

use super::types::{JournalSwap, ReconcileReport, RunRow, RunSpec, RunStatus, Submitted, ToolCallRow};
use crate::error::JournalError;

#[cfg(doc)]
use super::{PostgresStore, SqliteStore};

/// A shared handle to a run store, as the runner and the CLI hold it.
pub type SharedStore = Arc<dyn RunStore>;

/// Where runs live: runs and lanes, messages and checkpoints, the tool-call envelope (F34),
/// run journals (F35), heartbeats, cancel requests and the reconciler (F33).
///
/// Every state change that two workers could race on is one conditional statement (or one
/// transaction) in the database, so the database, not the workers' good manners, keeps one
/// active run per lane and one holder per run.
#[async_trait]
pub trait RunStore: Send + Sync + std::fmt::Debug {
    /// The backend's name (`sqlite`, `postgres`).
    fn backend(&self) -> &'static str;

    /// The name this store writes into the runs it claims (`host:pid` by default).
    fn worker(&self) -> &str;

    /// Closes the connections (the next call fails); tests use it to play a crashed process.
    async fn close(&self);

    // ---- runs and lanes (F31) ----

    /// Records a run as queued, without starting it: a worker (or the submitter, with
    /// [`RunStore::claim_run`]) starts it when its lane is free.
    async fn enqueue(&self, spec: &RunSpec) -> Result<(), JournalError>;

    /// How many queued runs of `lane` were submitted before `run_id`.
    async fn queued_ahead(&self, lane: &str, run_id: &str) -> Result<i64, JournalError>;

    /// Records a run; starts it when its lane is free, queues it otherwise.
    async fn submit(&self, spec: &RunSpec) -> Result<Submitted, JournalError> {
        self.enqueue(spec).await?;
        let dispatched = match self.claim_next(&spec.lane).await? {
            Some(claimed) if claimed == spec.run_id => return Ok(Submitted::Started),
            other => other,
        };
        Ok(Submitted::Queued { ahead: self.queued_ahead(&spec.lane, &spec.run_id).await?, dispatched })
    }

    /// Replaces a run's recipe (a human continuing it on another server, say).
    async fn set_recipe(&self, run_id: &str, recipe: &serde_json::Value) -> Result<(), JournalError>;

    /// Starts the queued run `run_id` if it is due: the oldest queued run of its lane, with no
    /// run holding the lane. `false` when it is not (yet).
    async fn claim_run(&self, run_id: &str) -> Result<bool, JournalError>;

    /// Starts the oldest queued run of `lane` if no run holds it; returns its id. Two workers
    /// can never both start a run in one lane.
    async fn claim_next(&self, lane: &str) -> Result<Option<String>, JournalError>;

    /// Lanes with queued runs and no run holding them: the work a worker can start now.
    async fn due_lanes(&self) -> Result<Vec<String>, JournalError>;

    /// Sets a run's status.
    async fn set_status(&self, run_id: &str, status: RunStatus) -> Result<(), JournalError>;

    /// Moves a run to `running` only if its status is one of `from`; `false` when it was not
    /// (another process got there first, or another run holds its lane). The one way a run is
    /// taken over, so two resumers or two answers never drive the same run.
    async fn claim(&self, run_id: &str, from: &[RunStatus]) -> Result<bool, JournalError>;

    /// Takes over one run whose holder stopped: `running` with a heartbeat older than
    /// `stale_before` (ms), or `interrupted` by a shutdown and not cancelled, taken over fewer
    /// than `max_takeovers` times. It stays `running`, now held by this store's
    /// [`RunStore::worker`], its lane never released; the caller resumes it from its latest
    /// checkpoint. `None` when there is none.
    async fn take_over(&self, stale_before: i64, max_takeovers: i64) -> Result<Option<String>, JournalError>;

    /// Records a run's end and starts the next queued run of its lane (returned). A failure
    /// to start it is logged as `agent_run.dispatch_next_failed` and left to the next submission
    /// or reconcile.
    async fn finish(&self, run_id: &str, status: RunStatus) -> Result<Option<String>, JournalError> {
        self.set_status(run_id, status).await?;
        let Some(run) = self.run(run_id).await? else { return Ok(None) };
        match self.claim_next(&run.lane).await {
            Ok(next) => Ok(next),
            Err(error) => {
                tracing::warn!(name: "agent_run.dispatch_next_failed", lane = %run.lane, %error, "could not start the next run");
                Ok(None)
            }
        }
    }

    /// Records a heartbeat of a run this store holds; `false` when another worker took it
    /// over (the lease is lost: the caller must stop driving it).
    async fn heartbeat(&self, run_id: &str, at_ms: i64) -> Result<bool, JournalError>;

    /// Records a cancel request (F7); the running loop sees it at its next boundary.
    async fn request_cancel(&self, run_id: &str, at_ms: i64) -> Result<(), JournalError>;

    /// True once cancellation was requested.
    async fn cancel_requested(&self, run_id: &str) -> Result<bool, JournalError> {
        Ok(self.run(run_id).await?.is_some_and(|r| r.cancel_requested_at.is_some()))
    }

    /// One run.
    async fn run(&self, run_id: &str) -> Result<Option<RunRow>, JournalError>;

    /// Every run, in submission order.
    async fn runs(&self) -> Result<Vec<RunRow>, JournalError>;

    /// The reconciler (F33), safe to run on every worker at once: running runs whose heartbeat
    /// is older than `stale_after` become `timed_out` (flagged resumable when their latest
    /// checkpoint allows it); runs waiting on a human whose cancel request is older than
    /// `cancel_timeout` become `cancelled`; lanes whose next queued run is due are counted.
    async fn reconcile(
        &self,
        now: i64,
        stale_after: Duration,
        cancel_timeout: Duration,
    ) -> Result<ReconcileReport, JournalError>;

    // ---- the tool-call envelope (F34) ----

    /// The envelope row of a call.
    async fn tool_call(&self, run_id: &str, call_id: &str) -> Result<Option<ToolCallRow>, JournalError>;

    /// Writes `started_at` before a tool runs (committed before the tool is called).
    async fn start_tool_call(&self, run_id: &str, call: &ToolCall) -> Result<(), JournalError>;

    /// Writes `completed_at` and the result after the tool ran.
    async fn complete_tool_call(&self, run_id: &str, result: &ToolResult) -> Result<(), JournalError>;

    /// Records a human's verdict on a call a resume refused to re-run: what it did (`content`),
    /// so the next resume replays that instead of calling the tool.
    async fn resolve_tool_call(
        &self,
        run_id: &str,
        call_id: &str,
        content: &str,
        is_error: bool,
    ) -> Result<(), JournalError>;

    /// Tool calls of a run that started and never completed (what a resume-unsafe halt waits
    /// on), as `(call id, tool)`.
    async fn unfinished_tool_calls(&self, run_id: &str) -> Result<Vec<(String, String)>, JournalError>;

    /// Forgets an unfinished call's envelope row, so the next resume runs the call again (a
    /// human's `--retry`). A completed call is never forgotten.
    async fn forget_tool_call(&self, run_id: &str, call_id: &str) -> Result<(), JournalError>;

    // ---- run journals (F35) ----

    /// The journal of a conversation, as stored JSON.
    async fn load_journal(&self, conversation: &str) -> Result<Option<serde_json::Value>, JournalError>;

    /// Stores the journal of a conversation.
    async fn save_journal(&self, conversation: &str, body: &serde_json::Value) -> Result<(), JournalError>;

    /// The stored documents among `keys`, as `(key, body)`, in one query (keys not stored are
    /// left out). The journals table is a keyed JSON store; the gateway keeps its
    /// conversations there under `gateway/…` keys.
    async fn load_journals(&self, keys: &[String]) -> Result<Vec<(String, serde_json::Value)>, JournalError>;

    /// Stores several documents in one transaction (distinct keys).
    async fn save_journals(&self, entries: &[(String, serde_json::Value)]) -> Result<(), JournalError>;

    /// Stores `body` under `key` only while the stored document is still `expected` (`None`: no
    /// document is stored under `key`): optimistic concurrency for documents several processes
    /// update, such as the gateway's conversation states. `Ok(false)` when another writer got
    /// there first; nothing is then written, and the caller reads the document again. Documents
    /// compare as the JSON text this store writes.
    async fn swap_journal(
        &self,
        key: &str,
        expected: Option<&serde_json::Value>,
        body: &serde_json::Value,
    ) -> Result<bool, JournalError>;

    /// Swaps `key` as [`RunStore::swap_journal`] does and stores `entries` (distinct keys, none
    /// of them `key`) in the same statement: one round trip where the two calls cost two. The
    /// entries are stored whether or not the swap happens (the gateway's fingerprints of a
    /// history stay true whichever request saved the state first); the answer is whether it
    /// did.
    async fn swap_journal_saving(
        &self,
        key: &str,
        expected: Option<&serde_json::Value>,
        body: &serde_json::Value,
        entries: &[(String, serde_json::Value)],
    ) -> Result<bool, JournalError> {
        if !entries.is_empty() {
            self.save_journals(entries).await?;
        }
        self.swap_journal(key, expected, body).await
    }

    /// Several [`RunStore::swap_journal_saving`] calls, in as few writes as the backend can:
    /// SQLite runs them in one transaction, one commit for all (a gateway saving behind its
    /// answers groups the saves waiting under load). The answer is each swap's outcome, in
    /// order. On an error, the swaps before it may have happened (one by one, the default) or
    /// none did (one transaction).
    async fn swap_journals_saving(&self, swaps: &[JournalSwap<'_>]) -> Result<Vec<bool>, JournalError> {
        swap_each(self, swaps).await
    }

    // ---- messages and checkpoints (F32, F36) ----

    /// Saves a checkpoint in one transaction: the new messages (all of them after a rewrite such
    /// as compaction), then the checkpoint row. A crash leaves the previous checkpoint whole.
    async fn save_checkpoint(
        &self,
        run_id: &str,
        kind: CheckpointKind,
        header: &RunHeader,
        messages: &[Message],
    ) -> Result<(), JournalError>;

    /// The latest checkpoint (`resumable_only`: the latest one a resume may start from).
    async fn load_checkpoint(
        &self,
        run_id: &str,
        resumable_only: bool,
    ) -> Result<Option<StoredCheckpoint>, JournalError>;

    /// The latest checkpoint of any kind (a human pause included).
    async fn latest_checkpoint(&self, run_id: &str) -> Result<Option<StoredCheckpoint>, JournalError> {
        self.load_checkpoint(run_id, false).await
    }

    /// The latest checkpoint from which the run may be resumed (F34, S2).
    async fn latest_resumable(&self, run_id: &str) -> Result<Option<StoredCheckpoint>, JournalError> {
        self.load_checkpoint(run_id, true).await
    }

    /// The outcome a run recorded when it finished (or paused), from its latest checkpoint;
    /// `None` while it has none.
    async fn final_outcome(&self, run_id: &str) -> Result<Option<Outcome>, JournalError> {
        Ok(self.latest_checkpoint(run_id).await?.and_then(|c| match c.header.core.phase {
            looprail_loop_core::engine::Phase::Finished { outcome } => Some(outcome),
            _ => None,
        }))
    }
}

/// The engine's checkpoint seam over any run store.
#[derive(Debug, Clone)]
pub struct Checkpoints(pub SharedStore);

#[async_trait]
impl CheckpointStore for Checkpoints {
    async fn save(
        &self,
        run_id: &str,
        kind: CheckpointKind,
        header: &RunHeader,
        messages: &[Message],
    ) -> Result<(), StoreError> {
        self.0.save_checkpoint(run_id, kind, header, messages).await.map_err(StoreError::from)
    }

    async fn latest(&self, run_id: &str) -> Result<Option<StoredCheckpoint>, StoreError> {
        self.0.load_checkpoint(run_id, false).await.map_err(StoreError::from)
    }
}

/// A run taken over this many times is left to the reconciler and a human (it keeps killing its
/// workers, or keeps losing them). Below that, the reconciler leaves a stale run that a worker
/// can take over, and that only a take-over handles rightly, to the workers.
pub const MAX_TAKEOVERS: i64 = 5;

/// Each swap by [`RunStore::swap_journal_saving`], in order (what a backend without a
/// cheaper way does for [`RunStore::swap_journals_saving`]).
pub(crate) async fn swap_each<S: RunStore + ?Sized>(
    store: &S,
    swaps: &[JournalSwap<'_>],
) -> Result<Vec<bool>, JournalError> {
    let mut done = Vec::with_capacity(swaps.len());
    for swap in swaps {
        done.push(store.swap_journal_saving(swap.key, swap.expected, swap.body, swap.entries).await?);
    }
    Ok(done)
}

/// The name a store writes into the runs it claims unless told otherwise: `host:pid`.
pub fn default_worker_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("{host}:{}", std::process::id())
}
