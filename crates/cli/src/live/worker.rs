//! `looprail worker`: a long-lived process that executes queued runs from their recipes,
//! reconciling at start-up and every `journal.reconcile_interval_secs`; SIGTERM or SIGINT
//! stops the run in progress at its next safe boundary (left resumable) and then the worker.

use std::time::Duration;

use looprail::journal::{JournalConfig, Runner, SqliteStore};
use tokio_util::sync::CancellationToken;

use super::args::{ModelArgs, WorkerArgs};
use super::commands::runtime;
use super::recipe::Recipe;
use super::signals::shutdown_token;
use super::{open_store, runner};

/// No flags: a run's stored recipe is used as it is.
fn no_overrides(store: &std::path::Path) -> ModelArgs {
    ModelArgs {
        provider: None,
        model: None,
        base_url: None,
        config: None,
        store: store.to_path_buf(),
        workdir: None,
        no_stream: false,
        fallback_models: Vec::new(),
        summary_model: None,
    }
}

/// Reconciles with the default `[journal]` settings (each run's own config governs it while it
/// runs).
async fn reconcile(store: &SqliteStore, shutdown: &CancellationToken) -> Result<(), String> {
    let config = JournalConfig::default();
    let report = store
        .reconcile(looprail::journal::now_ms(), config.stale_after(), config.cancel_timeout())
        .await
        .map_err(|e| e.to_string())?;
    if !shutdown.is_cancelled() {
        eprintln!(
            "[worker] reconciled: {} timed out ({} resumable), {} cancelled, {} due",
            report.timed_out, report.resumable, report.cancelled, report.due
        );
    }
    Ok(())
}

/// Claims and executes one due run of the allowed lanes; `false` when none was due.
async fn execute_one(
    store: &SqliteStore,
    args: &WorkerArgs,
    shutdown: &CancellationToken,
) -> Result<bool, String> {
    let due = store.due_lanes().await.map_err(|e| e.to_string())?;
    let allowed = |lane: &str| {
        args.lanes.is_empty() || args.lanes.iter().any(|l| lane == format!("conversation:{l}") || lane == l)
    };
    for lane in due.iter().filter(|l| allowed(l)) {
        let Some(run_id) = store.claim_next(lane).await.map_err(|e| e.to_string())? else { continue };
        let row = store.run(&run_id).await.map_err(|e| e.to_string())?.ok_or("the claimed run vanished")?;
        let result = Recipe::stored(&run_id, row.recipe.as_ref(), &no_overrides(&args.store))
            .and_then(|recipe| runner(&recipe, store.clone(), shutdown.clone()));
        let runner: Runner = match result {
            Ok(runner) => runner,
            Err(error) => {
                eprintln!("[worker] run {run_id} cannot be executed: {error}");
                store
                    .set_status(&run_id, looprail::journal::RunStatus::Failed)
                    .await
                    .map_err(|e| e.to_string())?;
                return Ok(true);
            }
        };
        eprintln!("[worker] run {run_id}");
        match runner.execute(&run_id).await {
            Ok(outcome) => eprintln!("[worker] run {run_id}: {:?}", outcome.state),
            Err(error) => eprintln!("[worker] run {run_id} failed: {error}"),
        }
        return Ok(true);
    }
    Ok(false)
}

/// `looprail worker`.
pub fn worker(args: WorkerArgs) -> Result<u8, String> {
    runtime()?.block_on(async {
        let shutdown = shutdown_token();
        let store = open_store(&args.store, false).await?;
        let interval = JournalConfig::default().reconcile_interval();
        reconcile(&store, &shutdown).await?;
        let mut last_reconcile = tokio::time::Instant::now();
        while !shutdown.is_cancelled() {
            if last_reconcile.elapsed() >= interval {
                reconcile(&store, &shutdown).await?;
                last_reconcile = tokio::time::Instant::now();
            }
            if execute_one(&store, &args, &shutdown).await? {
                continue;
            }
            if args.exit_when_idle {
                break;
            }
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(args.poll_ms)) => {}
                () = shutdown.cancelled() => {}
            }
        }
        eprintln!("[worker] stopped");
        Ok(crate::exit::COMPLETED)
    })
}
