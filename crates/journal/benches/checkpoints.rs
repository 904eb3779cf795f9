//! Checkpoint write latency (p50/p99) and resume time for a 1,000-message run on the SQLite
//! store (issue 8). The percentiles are measured before divan runs (divan reports medians).

// A benchmark aborts loudly on a broken setup.
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use std::time::Instant;

use divan::Bencher;
use looprail_journal::RunStore as _;
use looprail_journal::SqliteStore;
use looprail_loop_core::context::KeepAll;
use looprail_loop_core::guards;
use looprail_loop_core::prelude::*;
use looprail_loop_core::store::CheckpointKind;

fn history(len: usize) -> Vec<Message> {
    let mut messages = vec![Message::system("sys"), Message::user("go")];
    let mut i = 0;
    while messages.len() < len {
        messages.push(Message::assistant_with_calls(
            None,
            vec![ToolCall::new(format!("c{i}"), "read", r#"{"path": "src/lib.rs"}"#)],
        ));
        messages.push(Message::tool_result(ToolResult::ok(
            format!("c{i}"),
            "fn main() { println!(\"hello\"); }".repeat(8),
        )));
        i += 1;
    }
    messages
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

async fn store_with_run(len: usize) -> (SqliteStore, Run, std::path::PathBuf) {
    let path = std::env::temp_dir().join(format!("looprail-bench-{}-{len}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let store = SqliteStore::open(&path).await.unwrap();
    let run = Run::builder(LoopConfig::default()).history(history(len)).build().unwrap();
    store.save_checkpoint("bench", CheckpointKind::Input, &run.header(), run.messages()).await.unwrap();
    (store, run, path)
}

fn percentiles() {
    let rt = runtime();
    rt.block_on(async {
        let (store, run, path) = store_with_run(1_000).await;
        let mut messages = run.messages().to_vec();
        let header = run.header();
        let mut latencies = Vec::new();
        for i in 0..400 {
            messages.push(Message::assistant_with_calls(
                None,
                vec![ToolCall::new(format!("n{i}"), "read", "{}")],
            ));
            messages.push(Message::tool_result(ToolResult::ok(format!("n{i}"), "ok")));
            let mut header = header.clone();
            header.message_count = messages.len();
            let started = Instant::now();
            store.save_checkpoint("bench", CheckpointKind::ToolResult, &header, &messages).await.unwrap();
            latencies.push(started.elapsed());
        }
        latencies.sort();
        let p = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q) as usize];
        println!("checkpoint write (2 new messages, 1,000+ stored): p50 {:?}  p99 {:?}", p(0.50), p(0.99));
        let _ = std::fs::remove_file(path);
    });
}

fn main() {
    percentiles();
    divan::main();
}

#[divan::bench(sample_count = 20)]
fn resume_1000_message_run(bencher: Bencher) {
    let rt = runtime();
    let (store, _, path) = rt.block_on(store_with_run(1_000));
    bencher.bench_local(|| {
        rt.block_on(async {
            let checkpoint = store.latest_resumable("bench").await.unwrap().unwrap();
            let run = Run::restore(
                checkpoint.header,
                checkpoint.messages,
                guards::defaults(&LoopConfig::default()),
                Box::new(KeepAll::default()),
            )
            .unwrap();
            divan::black_box(run.messages().len())
        })
    });
    let _ = std::fs::remove_file(path);
}
