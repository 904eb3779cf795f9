//! The journal's errors: typed, never a panic, whatever the database holds.

use looprail_loop_core::store::{CheckpointKind, StoreError};

/// What went wrong with the run store.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The database could not be opened or queried.
    #[error("database error: {0}")]
    Database(String),
    /// Another connection or process held the database: SQLite gave up waiting for it (after
    /// the busy timeout, or at once when waiting could not help).
    #[error(
        "the database is locked by another connection or process (busy timeout {waited_ms} ms); retry later"
    )]
    Locked {
        /// The busy timeout in force.
        waited_ms: u64,
    },
    /// A stored row could not be decoded.
    #[error("corrupt stored data in {what}: {reason}")]
    Corrupt {
        /// Which row.
        what: String,
        /// Why.
        reason: String,
    },
    /// The database was written by a newer looprail.
    #[error("the database schema is version {found}, this build knows up to {known}: upgrade looprail")]
    SchemaTooNew {
        /// The version found.
        found: i64,
        /// The newest this build knows.
        known: i64,
    },
    /// No such run.
    #[error("no run `{0}`")]
    UnknownRun(String),
    /// [`SqliteStore::open_existing`](crate::SqliteStore::open_existing) found no database file.
    #[error("no run store at {0}: check the path (--store), or start a run there first")]
    NoStore(String),
    /// The run has no checkpoint it can resume from.
    #[error("run `{run_id}` cannot be resumed: {reason}")]
    NotResumable {
        /// The run.
        run_id: String,
        /// Why.
        reason: String,
    },
    /// The run ended for good; resuming it would call the model again and run new side
    /// effects.
    #[error("run `{run_id}` is {status}: a finished run is not resumed (start a new run instead)")]
    Finished {
        /// The run.
        run_id: String,
        /// Its status.
        status: crate::store::RunStatus,
    },
    /// The run has ended (completed, failed, cancelled, timed out for good): a cancel request
    /// has nothing to stop, and is not recorded.
    #[error("run `{run_id}` already ended ({status}): there is nothing to cancel")]
    AlreadyEnded {
        /// The run.
        run_id: String,
        /// Its status.
        status: crate::store::RunStatus,
    },
    /// The run waits on a human: it is answered or its tool call resolved, not resumed.
    #[error("run `{run_id}` waits on a human: {what}")]
    WaitsOnHuman {
        /// The run.
        run_id: String,
        /// What it waits for and how to answer it.
        what: String,
    },
    /// A live worker holds the run (its heartbeat is fresh).
    #[error(
        "run `{run_id}` is running in another process (heartbeat {age_ms} ms ago); cancel it there or wait"
    )]
    HeldByWorker {
        /// The run.
        run_id: String,
        /// Age of its latest heartbeat.
        age_ms: i64,
    },
    /// The run is not waiting for what the caller tried to give it.
    #[error("run `{run_id}` {reason}")]
    NotWaiting {
        /// The run.
        run_id: String,
        /// What it is doing instead.
        reason: String,
    },
    /// Another worker took the run over (this one's heartbeats stopped reaching the store):
    /// this worker must not write to it any more.
    #[error("run `{run_id}` is now held by worker `{holder}`: this worker lost its lease")]
    LeaseLost {
        /// The run.
        run_id: String,
        /// Who holds it now.
        holder: String,
    },
    /// The store location is not one this build can open.
    #[error("bad store location `{0}`: give a file path or a postgres://user@host:port/db URL")]
    BadLocation(String),
    /// The engine refused the restored run.
    #[error(transparent)]
    Engine(#[from] looprail_loop_core::engine::EngineError),
    /// Driving the run failed.
    #[error("driving the run failed: {0}")]
    Driver(String),
}

impl JournalError {
    /// Maps a sqlx error, recognising a locked database.
    pub(crate) fn from_sqlx(error: sqlx::Error, waited_ms: u64) -> Self {
        let text = error.to_string();
        if text.contains("database is locked")
            || text.contains("database table is locked")
            || text.contains("SQLITE_BUSY")
        {
            JournalError::Locked { waited_ms }
        } else {
            JournalError::Database(text)
        }
    }

    pub(crate) fn corrupt(what: impl Into<String>, reason: impl std::fmt::Display) -> Self {
        JournalError::Corrupt { what: what.into(), reason: reason.to_string() }
    }
}

impl From<JournalError> for StoreError {
    fn from(error: JournalError) -> Self {
        match error {
            JournalError::Corrupt { .. } => StoreError::Corrupt(error.to_string()),
            other => StoreError::Unavailable(other.to_string()),
        }
    }
}

/// Why a resume did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResumeHalt {
    /// The system prompt changed since the checkpoint; a human must decide (F34).
    SystemPromptChanged,
    /// The latest checkpoint's kind does not allow resume.
    CheckpointKind(CheckpointKind),
}
