//! `looprail worker`: a long-lived process that executes runs from their recipes. Each pass it
//! first takes over a run whose holder stopped (a killed worker: stale heartbeat; a stopped
//! one: interrupted) and resumes it from its checkpoint, then claims the next due run of a
//! free lane. Any number of workers may share one store (PostgreSQL across hosts): the store
//! decides who gets what. The reconciler runs at start-up and every `--reconcile-secs`.
//! SIGTERM or SIGINT stops the run in progress at its next safe boundary, left `interrupted`
//! for another worker to take over, and then the worker. A store that stops answering (a
//! lost connection) is retried with backoff; the run it held is taken over once it is back.

use std::time::Duration;

use looprail::journal::{JournalConfig, RunStatus, RunStore, Runner, SharedStore, StoreLocation, now_ms};
use tokio_util::sync::CancellationToken;

use super::args::{ModelArgs, WorkerArgs};
use super::commands::runtime;
use super::recipe::Recipe;
use super::runner;
use super::signals::shutdown_token;

use looprail::journal::MAX_TAKEOVERS;

/// No flags: a run's stored recipe is used as it is.
fn no_overrides(store: &str) -> ModelArgs {
    ModelArgs {
        provider: None,
        model: None,
        base_url: None,
        config: None,
        store: store.to_owned(),
        workdir: None,
        no_stream: false,
        fallback_models: Vec::new(),
        summary_model: None,
    }
}

/// Reconciles with this worker's staleness and cancel timeout.
async fn reconcile(store: &dyn RunStore, journal: &JournalConfig, quiet: bool) -> Result<(), String> {
    let report = store
        .reconcile(now_ms(), journal.stale_after(), journal.cancel_timeout())
        .await
        .map_err(|e| e.to_string())?;
    if !quiet {
        eprintln!(
            "[worker] reconciled: {} timed out ({} resumable), {} cancelled, {} due",
            report.timed_out, report.resumable, report.cancelled, report.due
        );
    }
    Ok(())
}

/// Executes a run this worker holds, from its recipe. `taken_over`: it was resumed from a
/// stopped holder's checkpoint instead of started.
async fn execute(
    store: &SharedStore,
    args: &Worker,
    shutdown: &CancellationToken,
    run_id: &str,
    taken_over: bool,
) -> Result<(), String> {
    let row = store.run(run_id).await.map_err(|e| e.to_string())?.ok_or("the claimed run vanished")?;
    let built = Recipe::stored(run_id, row.recipe.as_ref(), &no_overrides(&args.store))
        .and_then(|recipe| runner(&recipe, store.clone(), shutdown.clone()));
    let runner: Runner = match built {
        Ok(runner) => runner,
        Err(error) => {
            eprintln!("[worker] run {run_id} cannot be executed: {error}");
            store.set_status(run_id, RunStatus::Failed).await.map_err(|e| e.to_string())?;
            return Ok(());
        }
    };
    let result = if taken_over {
        eprintln!("[worker] run {run_id} (taken over)");
        runner.execute_taken_over(run_id).await
    } else {
        eprintln!("[worker] run {run_id}");
        runner.execute(run_id).await
    };
    match result {
        Ok(outcome) => eprintln!("[worker] run {run_id}: {:?}", outcome.state),
        Err(error) => eprintln!("[worker] run {run_id} failed: {error}"),
    }
    Ok(())
}

/// One pass: take over a stopped run, or claim a due one of the allowed lanes; `false` when
/// there was nothing to do.
async fn pass(store: &SharedStore, args: &Worker, shutdown: &CancellationToken) -> Result<bool, String> {
    let allowed = |lane: &str| {
        args.lanes.is_empty() || args.lanes.iter().any(|l| lane == format!("conversation:{l}") || lane == l)
    };
    let stale_before = now_ms() - args.journal.stale_after().as_millis() as i64;
    // A worker limited to some lanes leaves other lanes' stopped runs to their own workers.
    if args.lanes.is_empty()
        && let Some(run_id) = store.take_over(stale_before, MAX_TAKEOVERS).await.map_err(|e| e.to_string())?
    {
        execute(store, args, shutdown, &run_id, true).await?;
        return Ok(true);
    }
    let due = store.due_lanes().await.map_err(|e| e.to_string())?;
    for lane in due.iter().filter(|l| allowed(l)) {
        if let Some(run_id) = store.claim_next(lane).await.map_err(|e| e.to_string())? {
            execute(store, args, shutdown, &run_id, false).await?;
            return Ok(true);
        }
    }
    Ok(false)
}

/// Waits `delay`, or less when a shutdown comes.
async fn pause(delay: Duration, shutdown: &CancellationToken) {
    tokio::select! {
        () = tokio::time::sleep(delay) => {}
        () = shutdown.cancelled() => {}
    }
}

/// The worker's arguments with its journal settings resolved.
struct Worker {
    args: WorkerArgs,
    journal: JournalConfig,
}

impl std::ops::Deref for Worker {
    type Target = WorkerArgs;
    fn deref(&self) -> &WorkerArgs {
        &self.args
    }
}

/// `looprail worker`.
pub fn worker(args: WorkerArgs) -> Result<u8, String> {
    let journal = args.journal()?;
    let args = Worker { args, journal };
    runtime()?.block_on(async {
        let shutdown = shutdown_token();
        let location = StoreLocation::parse(&args.store).map_err(|e| e.to_string())?;
        let store = looprail::journal::open(&location, false, args.name.as_deref())
            .await
            .map_err(|e| format!("{}: {e}", location.display()))?;
        eprintln!("[worker] {} on {} ({})", store.worker(), location.display(), store.backend());
        let interval = args.journal.reconcile_interval();
        eprintln!(
            "[worker] takes over runs silent for {} s; reconciles every {} s",
            args.journal.stale_after_secs, args.journal.reconcile_interval_secs
        );
        reconcile(store.as_ref(), &args.journal, false).await?;
        let mut last_reconcile = tokio::time::Instant::now();
        let mut backoff = Duration::from_millis(args.poll_ms.max(10));
        while !shutdown.is_cancelled() {
            if last_reconcile.elapsed() >= interval {
                if let Err(error) = reconcile(store.as_ref(), &args.journal, shutdown.is_cancelled()).await {
                    eprintln!("[worker] reconcile failed: {error}");
                }
                last_reconcile = tokio::time::Instant::now();
            }
            match pass(&store, &args, &shutdown).await {
                Ok(true) => {
                    backoff = Duration::from_millis(args.poll_ms.max(10));
                    continue;
                }
                Ok(false) if args.exit_when_idle => break,
                Ok(false) => pause(Duration::from_millis(args.poll_ms), &shutdown).await,
                Err(error) => {
                    // The store is unreachable (or refused): wait longer each time, up to 30 s.
                    eprintln!("[worker] store error, retrying in {} ms: {error}", backoff.as_millis());
                    pause(backoff, &shutdown).await;
                    backoff = (backoff * 2).min(Duration::from_secs(30));
                }
            }
        }
        eprintln!("[worker] stopped");
        Ok(crate::exit::COMPLETED)
    })
}
