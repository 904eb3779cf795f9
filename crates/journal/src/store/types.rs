//! The types a run store reads and writes: a run's status and row, a submission, a tool-call
//! envelope row, a reconcile report.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use looprail_loop_core::message::ToolResult;

use crate::error::JournalError;

#[cfg(doc)]
use super::RunStore;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// One document's swap with the documents stored beside it, as
/// [`RunStore::swap_journal_saving`] takes them; [`RunStore::swap_journals_saving`] takes many.
#[derive(Debug, Clone, Copy)]
pub struct JournalSwap<'a> {
    /// The swapped document's key.
    pub key: &'a str,
    /// The document it must still hold (`None`: it must hold none).
    pub expected: Option<&'a serde_json::Value>,
    /// The document stored when it does.
    pub body: &'a serde_json::Value,
    /// Documents stored either way (distinct keys, none of them `key`).
    pub entries: &'a [(String, serde_json::Value)],
}

/// Where a run is, as the store records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Waiting for its lane.
    Queued,
    /// Executing.
    Running,
    /// Paused for a human.
    WaitingOnHuman,
    /// Finished by the model.
    Completed,
    /// Ended by a limit or an error.
    Failed,
    /// Cancelled.
    Cancelled,
    /// Its heartbeat went stale (a crash) or a time limit ended it.
    TimedOut,
    /// Stopped at a safe boundary by a shutdown (SIGINT, SIGTERM); resumable.
    Interrupted,
}

impl RunStatus {
    /// The stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Running => "running",
            RunStatus::WaitingOnHuman => "waiting_on_human",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::TimedOut => "timed_out",
            RunStatus::Interrupted => "interrupted",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "queued" => RunStatus::Queued,
            "running" => RunStatus::Running,
            "waiting_on_human" => RunStatus::WaitingOnHuman,
            "completed" => RunStatus::Completed,
            "failed" => RunStatus::Failed,
            "cancelled" => RunStatus::Cancelled,
            "timed_out" => RunStatus::TimedOut,
            "interrupted" => RunStatus::Interrupted,
            _ => return None,
        })
    }

    /// True for states a lane waits on (the run still holds it): running, waiting on a human,
    /// and interrupted by a shutdown (the conversation goes on with it, not around it).
    pub fn holds_lane(self) -> bool {
        matches!(self, RunStatus::Running | RunStatus::WaitingOnHuman | RunStatus::Interrupted)
    }

    /// The `resume_available` flag a change to this status sets: an interrupted run is offered
    /// for resume; one that runs again, or ended, is not; the rest keep theirs (`None`).
    pub(crate) fn resumable_flag(self) -> Option<i64> {
        match self {
            RunStatus::Interrupted => Some(1),
            RunStatus::Queued | RunStatus::WaitingOnHuman | RunStatus::TimedOut => None,
            _ => Some(0),
        }
    }

    /// True for runs that ended for good: completed, failed, cancelled (and timed out, unless
    /// the reconciler flagged the run resumable).
    pub fn is_final(self) -> bool {
        matches!(self, RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled | RunStatus::TimedOut)
    }
}

impl ReconcileReport {
    /// Logs the pass as `agent_run.reconcile`.
    pub(crate) fn trace(&self) {
        tracing::info!(name: "agent_run.reconcile", timed_out = self.timed_out, resumable = self.resumable, cancelled = self.cancelled, due = self.due, "reconciled");
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A run as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunRow {
    /// The run.
    pub run_id: String,
    /// Its lane (`conversation:<id>`).
    pub lane: String,
    /// The run that delegated it, if any.
    pub parent_run_id: Option<String>,
    /// Delegation depth.
    pub depth: i64,
    /// The user message that started it.
    pub input: String,
    /// Its status.
    pub status: RunStatus,
    /// Submission order.
    pub seq: i64,
    /// Last heartbeat (ms since epoch).
    pub heartbeat_at: Option<i64>,
    /// When cancellation was requested.
    pub cancel_requested_at: Option<i64>,
    /// True when the reconciler found it resumable.
    pub resume_available: bool,
    /// What executes it, as its submitter stored it (see [`RunSpec::recipe`]).
    pub recipe: Option<serde_json::Value>,
    /// The worker that claimed it last (see [`RunStore::worker`]).
    pub worker: Option<String>,
    /// How many times a worker took it over after its holder stopped heartbeating.
    pub takeovers: i64,
}

type Column<'a, T> = &'a dyn Fn(&str) -> Result<T, JournalError>;

impl RunRow {
    /// A row read through the backend's column getters (text, optional text, integer, optional
    /// integer).
    pub(crate) fn parse(
        text: Column<'_, String>,
        opt_text: Column<'_, Option<String>>,
        int: Column<'_, i64>,
        opt_int: Column<'_, Option<i64>>,
    ) -> Result<Self, JournalError> {
        let status = text("status")?;
        Ok(RunRow {
            run_id: text("run_id")?,
            lane: text("lane")?,
            parent_run_id: opt_text("parent_run_id")?,
            depth: int("depth")?,
            input: text("input")?,
            status: RunStatus::parse(&status)
                .ok_or_else(|| JournalError::corrupt("runs.status", format!("unknown status `{status}`")))?,
            seq: int("seq")?,
            heartbeat_at: opt_int("heartbeat_at")?,
            cancel_requested_at: opt_int("cancel_requested_at")?,
            resume_available: int("resume_available")? != 0,
            recipe: opt_text("recipe")?
                .map(|text| serde_json::from_str(&text).map_err(|e| JournalError::corrupt("runs.recipe", e)))
                .transpose()?,
            worker: opt_text("worker")?,
            takeovers: int("takeovers")?,
        })
    }
}

/// A new run for [`RunStore::submit`].
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// A unique id.
    pub run_id: String,
    /// The lane; one active run per lane.
    pub lane: String,
    /// The user's message.
    pub input: String,
    /// The delegating run, for child runs (which get their own lane).
    pub parent_run_id: Option<String>,
    /// Delegation depth.
    pub depth: u32,
    /// Everything another process needs to execute the run as submitted (provider, model,
    /// base URL, tools, work directory, config), as the submitter defines it; never secrets.
    /// Opaque to the store.
    pub recipe: Option<serde_json::Value>,
}

impl RunSpec {
    /// The recipe as stored text.
    pub(crate) fn recipe_text(&self) -> Result<Option<String>, JournalError> {
        self.recipe
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| JournalError::corrupt("run recipe", e))
    }

    /// The same run with the recipe its executor needs.
    #[must_use]
    pub fn with_recipe(mut self, recipe: serde_json::Value) -> Self {
        self.recipe = Some(recipe);
        self
    }

    /// A top-level run in the lane of `conversation`.
    pub fn new(run_id: impl Into<String>, conversation: &str, input: impl Into<String>) -> Self {
        Self {
            run_id: run_id.into(),
            lane: format!("conversation:{conversation}"),
            input: input.into(),
            parent_run_id: None,
            depth: 0,
            recipe: None,
        }
    }
}

/// What [`RunStore::submit`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Submitted {
    /// The lane was free: the run is now running.
    Started,
    /// The lane is busy: the run waits behind `ahead` others.
    Queued {
        /// Runs before it.
        ahead: i64,
        /// An older queued run this submission started because the lane was free: the caller
        /// must execute it (and the lane after it).
        dispatched: Option<String>,
    },
}

/// A tool-call envelope row (F34).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallRow {
    /// The tool.
    pub tool: String,
    /// When it started last (ms).
    pub started_at: i64,
    /// How many times it was started: more than 1 only for an idempotent call run again after
    /// an interruption (a side-effecting one is never started twice).
    pub attempts: i64,
    /// Its result, once completed.
    pub completed: Option<ToolResult>,
}

/// What a reconcile pass did (F33).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ReconcileReport {
    /// Running runs whose heartbeat went stale, now `timed_out`.
    pub timed_out: u64,
    /// Of those, how many may be resumed.
    pub resumable: u64,
    /// Runs waiting on a human whose cancel request expired, now `cancelled`.
    pub cancelled: u64,
    /// Lanes whose next queued run is due (no run holds the lane); a worker starts them.
    pub due: u64,
}
