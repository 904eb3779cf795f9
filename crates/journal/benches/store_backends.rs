//! The run store's two backends side by side (issue 17): claim + checkpoint throughput with 1,
//! 2 and 4 workers (a model that answers at once, each run in its own lane), and the latency
//! of a checkpoint write of 2 new messages on a 20- and on a 1,000-message run (p50/p99): a
//! write must cost O(new messages), not O(history). PostgreSQL is a throwaway server started
//! by `looprail-testkit-postgres`; without PostgreSQL installed its rows are skipped.
//!
//! Exits non-zero when a write on the 1,000-message run costs more than 2x the same write on
//! the 20-message run (median).

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use looprail_journal::{PostgresStore, RunSpec, Runner, SharedStore, SqliteStore};
use looprail_loop_core::prelude::*;
use looprail_loop_core::store::CheckpointKind;

/// Answers every request at once.
struct Instantly;

#[async_trait]
impl Provider for Instantly {
    fn model(&self) -> &str {
        "instant"
    }
    async fn complete(&self, _request: &ModelRequest<'_>) -> Result<ModelResponse, ProviderError> {
        Ok(ModelResponse::text("instant", "done").with_usage(10, 2))
    }
}

#[derive(Clone)]
enum Backend {
    Sqlite(std::path::PathBuf),
    Postgres(String),
}

impl Backend {
    async fn open(&self, worker: &str) -> SharedStore {
        match self {
            Backend::Sqlite(path) => SqliteStore::open(path).await.unwrap().with_worker(worker).into(),
            Backend::Postgres(url) => PostgresStore::connect(url).await.unwrap().with_worker(worker).into(),
        }
    }
}

async fn fresh(kind: &str, tag: &str) -> Option<Backend> {
    match kind {
        "sqlite" => {
            let path = std::env::temp_dir().join(format!("looprail-bench-{}-{tag}.db", std::process::id()));
            let _ = std::fs::remove_file(&path);
            Some(Backend::Sqlite(path))
        }
        _ => {
            let server = looprail_testkit_postgres::server_or_skip("the store benchmark")?;
            Some(Backend::Postgres(server.fresh_database().await))
        }
    }
}

/// Runs per second and checkpoints per second with `workers` workers executing `runs` runs.
async fn throughput(backend: &Backend, workers: usize, runs: usize) -> (f64, f64) {
    let submitter = backend.open("submitter").await;
    for i in 0..runs {
        submitter.enqueue(&RunSpec::new(format!("r{i}"), &format!("c{i}"), "go")).await.unwrap();
    }
    let started = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..workers {
        let store = backend.open(&format!("w{w}")).await;
        tasks.push(tokio::spawn(async move {
            let runner = Runner::new(Arc::clone(&store), Arc::new(Instantly), ToolSet::new(), "You answer.")
                .with_lane_draining(false);
            loop {
                let mut claimed = None;
                for lane in store.due_lanes().await.unwrap() {
                    if let Some(run) = store.claim_next(&lane).await.unwrap() {
                        claimed = Some(run);
                        break;
                    }
                }
                let Some(run) = claimed else { return };
                runner.execute(&run).await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let elapsed = started.elapsed().as_secs_f64();
    let mut checkpoints = 0;
    for i in 0..runs {
        // Every run wrote its input, the model's reply and its end.
        checkpoints +=
            usize::from(submitter.latest_checkpoint(&format!("r{i}")).await.unwrap().is_some()) * 3;
    }
    (runs as f64 / elapsed, checkpoints as f64 / elapsed)
}

fn history(len: usize) -> Vec<Message> {
    let mut messages = vec![Message::system("sys"), Message::user("go")];
    let mut i = 0;
    while messages.len() < len {
        messages
            .push(Message::assistant_with_calls(None, vec![ToolCall::new(format!("c{i}"), "read", "{}")]));
        messages.push(Message::tool_result(ToolResult::ok(format!("c{i}"), "fn main() {}".repeat(20))));
        i += 1;
    }
    messages
}

/// p50 and p99 of a checkpoint write adding 2 messages to a run of `len` messages.
async fn write_latency(backend: &Backend, len: usize) -> (Duration, Duration) {
    let store = backend.open("w").await;
    let run = Run::builder(LoopConfig::default()).history(history(len)).build().unwrap();
    let mut messages = run.messages().to_vec();
    let id = format!("lat{len}");
    store.save_checkpoint(&id, CheckpointKind::Input, &run.header(), &messages).await.unwrap();
    let mut latencies = Vec::new();
    for i in 0..300 {
        messages
            .push(Message::assistant_with_calls(None, vec![ToolCall::new(format!("n{i}"), "read", "{}")]));
        messages.push(Message::tool_result(ToolResult::ok(format!("n{i}"), "ok")));
        let started = Instant::now();
        store.save_checkpoint(&id, CheckpointKind::ToolResult, &run.header(), &messages).await.unwrap();
        latencies.push(started.elapsed());
    }
    latencies.sort();
    let p = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q) as usize];
    (p(0.50), p(0.99))
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut failed = false;
    rt.block_on(async {
        println!("store backends (2-core machine; each run in its own lane)");
        println!("{:<10} {:>8} {:>10} {:>14}", "backend", "workers", "runs/s", "checkpoints/s");
        for kind in ["sqlite", "postgres"] {
            for workers in [1, 2, 4] {
                let Some(backend) = fresh(kind, &format!("tp{workers}")).await else { continue };
                let (runs, checkpoints) = throughput(&backend, workers, 200).await;
                println!("{kind:<10} {workers:>8} {runs:>10.0} {checkpoints:>14.0}");
            }
        }
        println!("\n{:<10} {:>10} {:>10} {:>10}", "backend", "history", "p50", "p99");
        for kind in ["sqlite", "postgres"] {
            let Some(backend) = fresh(kind, "lat").await else { continue };
            let (small, _) = write_latency(&backend, 20).await;
            let (large, large_p99) = write_latency(&backend, 1_000).await;
            let (_, small_p99) = write_latency(&backend, 20).await;
            println!("{kind:<10} {:>10} {small:>10.2?} {small_p99:>10.2?}", 20);
            println!("{kind:<10} {:>10} {large:>10.2?} {large_p99:>10.2?}", 1_000);
            let ratio = large.as_secs_f64() / small.as_secs_f64();
            let pass = ratio <= 2.0;
            failed |= !pass;
            println!(
                "{kind:<10} write of 2 messages, 1,000 vs 20 stored: {ratio:.2}x (target <= 2x) {}",
                if pass { "pass" } else { "FAIL" }
            );
        }
    });
    if failed {
        std::process::exit(1);
    }
}
