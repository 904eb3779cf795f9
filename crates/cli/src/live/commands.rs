//! The commands on live runs. Each opens the store, builds the runner from the run's recipe,
//! and prints as `run` does, with `run`'s exit codes.

use std::time::Duration;

use looprail::core::outcome::Outcome;
use looprail::journal::{
    JournalError, Resolution, Resumed, RunSpec, RunStatus, RunStore, Runner, Started, Waiting,
};
use tokio_util::sync::CancellationToken;

use super::args::{AnswerArgs, ModelArgs, ResolveArgs, ResumeArgs, RunArgs, WaitArgs};
use super::recipe::Recipe;
use super::show::{one_line, show};
use super::signals::shutdown_token;
use super::{open_store, runner};

pub(super) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
}

/// Prints an outcome of a run this process drove.
fn shown(run_id: &str, outcome: &Outcome, recipe: &Recipe, shutdown: &CancellationToken) -> u8 {
    show(run_id, outcome, recipe.stream, shutdown.is_cancelled())
}

/// A new run's id, recipe and spec.
fn new_run(args: &RunArgs) -> Result<(String, Recipe, RunSpec), String> {
    let recipe = Recipe::new(&args.model)?;
    let run_id = format!("run-{}", uuid::Uuid::now_v7());
    let lane = args.lane.clone().unwrap_or_else(|| run_id.clone());
    let spec = RunSpec::new(&run_id, &lane, &args.task).with_recipe(recipe.to_json()?);
    Ok((run_id, recipe, spec))
}

/// The runner and recipe for an existing run (flags replace parts of its stored recipe),
/// after a reconcile.
async fn existing_run(
    args: &ModelArgs,
    run_id: &str,
    shutdown: CancellationToken,
) -> Result<(Runner, Recipe), String> {
    let store = open_store(&args.store, true).await?;
    let row =
        store.run(run_id).await.map_err(|e| e.to_string())?.ok_or_else(|| format!("no run `{run_id}`"))?;
    let recipe = Recipe::stored(run_id, row.recipe.as_ref(), args)?;
    let runner = runner(&recipe, store, shutdown)?;
    runner.reconcile().await.map_err(|e| e.to_string())?;
    Ok((runner, recipe))
}

/// `looprail run`: the exit code of the outcome (see `crate::exit`).
pub fn run(args: RunArgs) -> Result<u8, String> {
    let (run_id, recipe, spec) = new_run(&args)?;
    runtime()?.block_on(async {
        let shutdown = shutdown_token();
        let store = open_store(&args.model.store, false).await?;
        let runner = runner(&recipe, store, shutdown.clone())?;
        runner.reconcile().await.map_err(|e| e.to_string())?;
        eprintln!("[run {run_id}]");
        let outcome = match runner.start(&spec).await.map_err(|e| e.to_string())? {
            Started::Ran(outcome) => outcome,
            Started::Queued { ahead } => {
                eprintln!(
                    "queued in lane `{}` behind {ahead} run(s); waiting for its turn (Ctrl-C cancels it; see `looprail runs`)",
                    args.lane.as_deref().unwrap_or(&run_id)
                );
                runner.wait_and_execute(&run_id, Duration::from_millis(250)).await.map_err(|e| e.to_string())?
            }
        };
        Ok(shown(&run_id, &outcome, &recipe, &shutdown))
    })
}

/// `looprail submit`: stores the run, queued, for a worker; prints its id.
pub fn submit(args: RunArgs) -> Result<u8, String> {
    let (run_id, _, spec) = new_run(&args)?;
    runtime()?.block_on(async {
        let store = open_store(&args.model.store, false).await?;
        store.enqueue(&spec).await.map_err(|e| e.to_string())?;
        println!("{run_id}");
        eprintln!(
            "queued; a `looprail worker` on this store runs it (follow it with `looprail wait {run_id}`)"
        );
        Ok(crate::exit::COMPLETED)
    })
}

/// `looprail resume`: the exit code of the outcome.
pub fn resume(args: ResumeArgs) -> Result<u8, String> {
    runtime()?.block_on(async {
        let shutdown = shutdown_token();
        let (runner, recipe) = existing_run(&args.model, &args.run_id, shutdown.clone()).await?;
        match runner.resume(&args.run_id).await.map_err(|e| e.to_string())? {
            Resumed::Ran(outcome) => Ok(shown(&args.run_id, &outcome, &recipe, &shutdown)),
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
        let (runner, recipe) = existing_run(&args.model, &args.run_id, shutdown.clone()).await?;
        if args.queue {
            // The worker executes the run as it is now described, flags included.
            runner.store().set_recipe(&args.run_id, &recipe.to_json()?).await.map_err(|e| e.to_string())?;
            runner.answer_queued(&args.run_id, &args.text).await.map_err(|e| e.to_string())?;
            eprintln!(
                "answered; the run is queued for a worker (follow it with `looprail wait {}`)",
                args.run_id
            );
            return Ok(crate::exit::COMPLETED);
        }
        let outcome = runner.answer(&args.run_id, &args.text).await.map_err(|e| e.to_string())?;
        Ok(shown(&args.run_id, &outcome, &recipe, &shutdown))
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
        let (runner, recipe) = existing_run(&args.model, &args.run_id, shutdown.clone()).await?;
        if args.queue {
            runner
                .resolve_queued(&args.run_id, &args.call_id, resolution)
                .await
                .map_err(|e| e.to_string())?;
            eprintln!(
                "recorded; the run is queued for a worker (follow it with `looprail wait {}`)",
                args.run_id
            );
            return Ok(crate::exit::COMPLETED);
        }
        match runner.resolve(&args.run_id, &args.call_id, resolution).await.map_err(|e| e.to_string())? {
            Resumed::Ran(outcome) => Ok(shown(&args.run_id, &outcome, &recipe, &shutdown)),
            Resumed::Halted(halt) => {
                eprintln!("the run was not resumed ({halt:?}); it waits for a human");
                Ok(crate::exit::WAITING_ON_HUMAN)
            }
        }
    })
}

/// The exit code of a run that ended or paused, from its status and last outcome.
fn code_of(status: RunStatus, outcome: Option<&Outcome>) -> u8 {
    match (status, outcome) {
        (RunStatus::WaitingOnHuman, _) => crate::exit::WAITING_ON_HUMAN,
        (RunStatus::Cancelled | RunStatus::Interrupted, _) => crate::exit::CANCELLED,
        (_, Some(outcome)) => crate::exit::for_outcome(outcome),
        (RunStatus::Completed, None) => crate::exit::COMPLETED,
        _ => crate::exit::FAILED,
    }
}

/// `looprail wait`: waits until the run ends or pauses, prints its reply, exits with its code.
pub fn wait(args: WaitArgs) -> Result<u8, String> {
    runtime()?.block_on(async {
        let store = open_store(&args.store, true).await?;
        let deadline = args.timeout_secs.map(|s| tokio::time::Instant::now() + Duration::from_secs(s));
        loop {
            let row = store
                .run(&args.run_id)
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("no run `{}`", args.run_id))?;
            if !matches!(row.status, RunStatus::Queued | RunStatus::Running) {
                let outcome = store.final_outcome(&args.run_id).await.map_err(|e| e.to_string())?;
                if let Some(outcome) = &outcome {
                    println!("{}", outcome.final_text);
                }
                if row.status == RunStatus::WaitingOnHuman {
                    eprintln!(
                        "waiting for {}",
                        waiting_note(store.as_ref(), &args.run_id).await.map_err(|e| e.to_string())?
                    );
                }
                eprintln!("[{}] run {}", row.status, args.run_id);
                return Ok(code_of(row.status, outcome.as_ref()));
            }
            if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                return Err(format!(
                    "run `{}` is still {} after {} s",
                    args.run_id,
                    row.status,
                    args.timeout_secs.unwrap_or(0)
                ));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
}

/// What a waiting run waits for, in a few words.
async fn waiting_note(store: &dyn RunStore, run_id: &str) -> Result<String, JournalError> {
    let checkpoint = store.latest_checkpoint(run_id).await?;
    let unfinished = store.unfinished_tool_calls(run_id).await?;
    Ok(match looprail::journal::waiting_from(checkpoint.as_ref(), &unfinished) {
        Waiting::Question { question } => format!("question: {}", one_line(&question)),
        Waiting::UnsafeCall { call_id, tool } => format!("unsafe call {call_id} of `{tool}`: resolve it"),
        Waiting::SystemPromptChanged => "the system prompt changed".to_owned(),
    })
}

/// `looprail runs`.
pub fn list(store: &str) -> Result<(), String> {
    runtime()?.block_on(async {
        let store = open_store(store, true).await?;
        let runs = store.runs().await.map_err(|e| e.to_string())?;
        println!("{:<40} {:<18} {:<10} {:<24} task / waiting for", "run", "status", "resumable", "worker");
        for run in runs {
            let detail = if run.status == RunStatus::WaitingOnHuman {
                waiting_note(store.as_ref(), &run.run_id).await.map_err(|e| e.to_string())?
            } else {
                run.input.chars().take(60).collect()
            };
            println!(
                "{:<40} {:<18} {:<10} {:<24} {detail}",
                run.run_id,
                run.status.as_str(),
                if run.resume_available { "yes" } else { "" },
                run.worker.as_deref().unwrap_or("")
            );
        }
        Ok(())
    })
}

/// `looprail cancel`.
pub fn cancel(store: &str, run_id: &str) -> Result<(), String> {
    runtime()?.block_on(async {
        let store = open_store(store, true).await?;
        // A run that ended is refused with its state (JournalError::AlreadyEnded), unchanged.
        store.request_cancel(run_id, looprail::journal::now_ms()).await.map_err(|e| e.to_string())?;
        let status = store.run(run_id).await.map_err(|e| e.to_string())?.map(|r| r.status);
        match status {
            Some(
                RunStatus::WaitingOnHuman | RunStatus::Queued | RunStatus::Interrupted | RunStatus::TimedOut,
            ) => {
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
