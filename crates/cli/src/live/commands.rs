//! The commands on live runs. Each opens the store, builds the runner from the command line,
//! and prints as `run` does, with `run`'s exit codes.

use std::time::Duration;

use looprail::core::outcome::Outcome;
use looprail::journal::{
    JournalError, Resolution, Resumed, RunSpec, RunStatus, SqliteStore, Started, Waiting,
};
use tokio_util::sync::CancellationToken;

use super::show::{one_line, show};
use super::signals::shutdown_token;
use super::{AnswerArgs, ResolveArgs, ResumeArgs, RunArgs, runner};

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
}

/// Prints an outcome of a run this process drove.
fn shown(run_id: &str, outcome: &Outcome, no_stream: bool, shutdown: &CancellationToken) -> u8 {
    show(run_id, outcome, !no_stream, shutdown.is_cancelled())
}

/// `looprail run`: the exit code of the outcome (see `crate::exit`).
pub fn run(args: RunArgs) -> Result<u8, String> {
    runtime()?.block_on(async {
        let shutdown = shutdown_token();
        let runner = runner(&args.model, false, shutdown.clone()).await?;
        let run_id = format!("run-{}", uuid::Uuid::now_v7());
        let lane = args.lane.clone().unwrap_or_else(|| run_id.clone());
        eprintln!("[run {run_id}]");
        let outcome = match runner.start(&RunSpec::new(&run_id, &lane, &args.task)).await.map_err(|e| e.to_string())? {
            Started::Ran(outcome) => outcome,
            Started::Queued { ahead } => {
                eprintln!(
                    "queued in lane `{lane}` behind {ahead} run(s); waiting for its turn (Ctrl-C cancels it; see `looprail runs`)"
                );
                runner.wait_and_execute(&run_id, Duration::from_millis(250)).await.map_err(|e| e.to_string())?
            }
        };
        Ok(shown(&run_id, &outcome, args.model.no_stream, &shutdown))
    })
}

/// `looprail resume`: the exit code of the outcome.
pub fn resume(args: ResumeArgs) -> Result<u8, String> {
    runtime()?.block_on(async {
        let shutdown = shutdown_token();
        let runner = runner(&args.model, true, shutdown.clone()).await?;
        match runner.resume(&args.run_id).await.map_err(|e| e.to_string())? {
            Resumed::Ran(outcome) => Ok(shown(&args.run_id, &outcome, args.model.no_stream, &shutdown)),
            Resumed::Halted(halt) => {
                eprintln!("the run was not resumed ({halt:?}); it waits for a human");
                Ok(crate::exit::WAITING_ON_HUMAN)
            }
        }
    })
}

/// `looprail answer`: records the answer and drives the run on.
pub fn answer(args: AnswerArgs) -> Result<u8, String> {
    runtime()?.block_on(async {
        let shutdown = shutdown_token();
        let runner = runner(&args.model, true, shutdown.clone()).await?;
        let outcome = runner.answer(&args.run_id, &args.text).await.map_err(|e| e.to_string())?;
        Ok(shown(&args.run_id, &outcome, args.model.no_stream, &shutdown))
    })
}

/// `looprail resolve`: records the verdict on an unsafe call and drives the run on.
pub fn resolve(args: ResolveArgs) -> Result<u8, String> {
    let resolution = match (&args.done, args.retry, args.skip) {
        (Some(result), _, _) => Resolution::Done(result.clone()),
        (None, true, _) => Resolution::Retry,
        _ => Resolution::Skip,
    };
    runtime()?.block_on(async {
        let shutdown = shutdown_token();
        let runner = runner(&args.model, true, shutdown.clone()).await?;
        match runner.resolve(&args.run_id, &args.call_id, resolution).await.map_err(|e| e.to_string())? {
            Resumed::Ran(outcome) => Ok(shown(&args.run_id, &outcome, args.model.no_stream, &shutdown)),
            Resumed::Halted(halt) => {
                eprintln!("the run was not resumed ({halt:?}); it waits for a human");
                Ok(crate::exit::WAITING_ON_HUMAN)
            }
        }
    })
}

/// What a waiting run waits for, in a few words.
async fn waiting_note(store: &SqliteStore, run_id: &str) -> Result<String, JournalError> {
    let checkpoint = store.latest_checkpoint(run_id).await?;
    let unfinished = store.unfinished_tool_calls(run_id).await?;
    let waiting = looprail::journal::waiting_from(checkpoint.as_ref(), &unfinished);
    Ok(match waiting {
        Waiting::Question { question } => format!("question: {}", one_line(&question)),
        Waiting::UnsafeCall { call_id, tool } => format!("unsafe call {call_id} of `{tool}`: resolve it"),
        Waiting::SystemPromptChanged => "the system prompt changed".to_owned(),
    })
}

/// `looprail runs`.
pub fn list(store: &std::path::Path) -> Result<(), String> {
    runtime()?.block_on(async {
        let store = SqliteStore::open_existing(store).await.map_err(|e| e.to_string())?;
        let runs = store.runs().await.map_err(|e| e.to_string())?;
        println!("{:<40} {:<18} {:<10} task / waiting for", "run", "status", "resumable");
        for run in runs {
            let detail = if run.status == RunStatus::WaitingOnHuman {
                waiting_note(&store, &run.run_id).await.map_err(|e| e.to_string())?
            } else {
                run.input.chars().take(60).collect()
            };
            println!(
                "{:<40} {:<18} {:<10} {detail}",
                run.run_id,
                run.status.as_str(),
                if run.resume_available { "yes" } else { "" }
            );
        }
        Ok(())
    })
}

/// `looprail cancel`.
pub fn cancel(store: &std::path::Path, run_id: &str) -> Result<(), String> {
    runtime()?.block_on(async {
        let store = SqliteStore::open_existing(store).await.map_err(|e| e.to_string())?;
        store.request_cancel(run_id, looprail::journal::now_ms()).await.map_err(|e| e.to_string())?;
        let status = store.run(run_id).await.map_err(|e| e.to_string())?.map(|r| r.status);
        match status {
            Some(RunStatus::WaitingOnHuman | RunStatus::Queued | RunStatus::Interrupted) => {
                // No process drives such a run: nothing else would ever observe the request, so
                // the run is cancelled now.
                store.set_status(run_id, RunStatus::Cancelled).await.map_err(|e| e.to_string())?;
                eprintln!("cancelled (no process was driving it)");
            }
            _ => eprintln!("cancel recorded; the run stops at its next safe boundary"),
        }
        Ok(())
    })
}
