//! `looprail run`, `submit`, `worker`, `wait`, `runs`, `resume`, `answer`, `resolve` and
//! `cancel`: live agents on a real provider, durable in a SQLite file. This module builds the
//! runner for a run's [`Recipe`]; `args` holds the command lines, `commands` and `worker` the
//! commands, `show` what they print, `signals` the shutdown handling.

mod args;
mod commands;
mod recipe;
mod show;
mod signals;
mod worker;

use std::sync::Arc;

use looprail::compaction::AutoCompaction;
use looprail::guardrails::{DegenerateReplies, default_stack};
use looprail::journal::{JournalError, Runner, SharedStore, StoreLocation};
use looprail::retry::RetryingExecutor;
use looprail_workdir::Workdir;
use tokio_util::sync::CancellationToken;

pub use args::{AnswerArgs, ResolveArgs, ResumeArgs, RunArgs, WaitArgs, WorkerArgs};
pub use commands::{answer, cancel, list, resolve, resume, run, submit, wait};
use recipe::Recipe;
use show::printer;
pub use worker::worker;

const SYSTEM: &str = "You are a careful assistant working in a local directory. Use the tools to \
read, search and write files there; answer concisely.";

/// Opens the store at `location` (a SQLite file or a `postgres://` URL); `existing` refuses a
/// SQLite file that is not there (every command but `run`, `submit` and `worker`).
async fn open_store(location: &str, existing: bool) -> Result<SharedStore, String> {
    let location = StoreLocation::parse(location).map_err(|e| e.to_string())?;
    looprail::journal::open(&location, existing, None).await.map_err(|e| match e {
        JournalError::NoStore(_) => e.to_string(),
        other => format!("{}: {other}", location.display()),
    })
}

/// The runner that executes runs made with `recipe`, stopping at the next safe boundary when
/// `shutdown` fires. It only runs what its caller hands it: the lane's next run is left for
/// its own process or a worker (each run executes with its own recipe).
fn runner(recipe: &Recipe, store: SharedStore, shutdown: CancellationToken) -> Result<Runner, String> {
    let config = &recipe.config;
    let recipe::Models { main, summarizer } = recipe.models()?;
    let tools = Workdir::open(&recipe.workdir).map_err(|e| format!("work directory: {e}"))?.tools();
    let (guardrails, compaction) = (config.guardrails.clone(), config.compaction.clone());
    let runner = Runner::new(store, main, tools, SYSTEM)
        .with_config(config.loop_.clone())
        .with_reply_watch(Arc::new(DegenerateReplies::new(config.guardrails.degenerate_reply.clone())))
        .with_guards(move || default_stack(&guardrails))
        .with_policy(move || Box::new(AutoCompaction::new(compaction.clone())))
        .with_executor(Arc::new(RetryingExecutor::new(config.retry.tool.clone())))
        .with_events(printer())
        .with_streaming(recipe.stream)
        .with_journal_config(&config.journal)
        .with_delegation(config.delegation.clone())
        .with_lane_draining(false)
        .with_shutdown(shutdown);
    Ok(match summarizer {
        Some(summarizer) => runner.with_summarizer(summarizer, config.provider.summary_timeout()),
        None => runner,
    })
}
