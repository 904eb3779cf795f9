//! Durable runs for looprail: a run survives a process crash and never repeats a side
//! effect.
//!
//! - [`RunStore`]: the run store's one interface: runs and lanes, messages, transactional
//!   checkpoints, the tool-call envelope, journals, heartbeats, cancel requests, take-over and
//!   the reconciler. Two backends pass one conformance suite: [`SqliteStore`] (embedded, one
//!   file, WAL) and [`PostgresStore`] (many workers on many hosts; the database enforces one
//!   active run per lane and one holder per run). [`open`] picks one from a path or a
//!   `postgres://` URL ([`StoreLocation`]).
//! - [`EnvelopeExecutor`] records every tool call before and after it runs; on resume, a
//!   completed call is replayed from its stored result, an interrupted idempotent call runs again,
//!   and an interrupted side-effecting call halts the run for a human ([`ResumeSafety`]).
//! - [`Runner`] submits runs to lanes (one active run per `conversation:<id>`), drives them with
//!   heartbeats and cancel requests, and resumes them from their latest resumable checkpoint;
//!   a run waiting on a human is answered ([`Runner::answer`]) or its unsafe tool call resolved
//!   ([`Runner::resolve`]), never blindly resumed.
//! - [`RunJournal`]: the model's durable working notes, with its three tools.
//! - Delegation ([`DelegationConfig`], off by default): the `delegate` tool starts a child run
//!   one level deeper, in its own lane, with a budget [`carve`]d from what the parent left.
//!
//! ```
//! use std::sync::Arc;
//! use looprail_journal::{RunStore, Runner, RunSpec, SqliteStore, Started};
//! use looprail_loop_core::prelude::*;
//! use looprail_loop_core::testkit::{RecordingTool, ScriptedProvider};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let dir = tempfile::tempdir()?; // removed, with the database, when dropped
//! let store = SqliteStore::open(&dir.path().join("runs.db")).await?;
//! let provider = ScriptedProvider::new("m").call_tool("send_email", r#"{"to": "a@b.c"}"#).reply_text("Sent.");
//! let email = RecordingTool::new("send_email").output("queued");
//! let runner = Runner::new(store.clone(), Arc::new(provider), ToolSet::new().with(email.clone()), "You send emails.");
//! let Started::Ran(outcome) = runner.start(&RunSpec::new("run-1", "c1", "Email Bob")).await? else { unreachable!() };
//! assert_eq!(outcome.final_text, "Sent.");
//! // The envelope keys calls by the engine's run-unique id (the provider's may repeat).
//! let row = store.tool_call("run-1", "lr-0").await?.unwrap();
//! assert!(row.completed.is_some(), "the envelope recorded the call and its result");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod config;
mod delegate;
mod envelope;
mod error;
mod human;
mod run_journal;
mod runner;
mod store;

pub use config::JournalConfig;
pub use delegate::{DELEGATE_TOOL, DelegationConfig, Spent, carve};
pub use envelope::{EnvelopeExecutor, FLAG_RESUME_UNSAFE, ResumeSafety};
pub use error::{JournalError, ResumeHalt};
pub use human::{Resolution, SKIPPED, Waiting, waiting_from};
pub use run_journal::{
    AppendRunJournalEntry, DIGEST_CHARS, GetRunJournal, JournalHandle, JournalState, RunJournal,
    UpdateRunJournal,
};
pub use runner::{Resumed, Runner, Started};
pub use store::{
    Checkpoints, JournalSwap, MAX_TAKEOVERS, PostgresStore, ReconcileReport, RunRow, RunSpec, RunStatus,
    RunStore, SharedStore, SqliteStore, StoreLocation, Submitted, ToolCallRow, default_worker_name, now_ms,
    open,
};
pub use store::{POSTGRES_SCHEMA_VERSION, SCHEMA_VERSION};
