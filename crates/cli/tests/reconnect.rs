//! A database outage in the middle of a run (issue 17), longer than the pool's 10 s wait for a
//! connection: the run's checkpoint write fails, the worker's store calls fail and are retried
//! with backoff, and once the database is back the run is taken over from its last checkpoint
//! and finishes — not lost, its write not repeated. (Its own test
//! binary: the restart must not disturb other tests' databases.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{json_call, json_text, temp_dir};
use looprail::journal::{PostgresStore, RunStatus, RunStore};
use looprail_providers::fake::FakeServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_restart_mid_run_loses_nothing() {
    let Some(server) = looprail_testkit_postgres::server_or_skip("the reconnect test") else { return };
    let url = server.fresh_database().await;
    let dir = temp_dir("reconnect");
    std::fs::write(dir.join("fast.toml"), "[journal]\nheartbeat_secs = 1\nstale_after_secs = 3\n").unwrap();
    let model = FakeServer::responding(|body| {
        let tools =
            body["messages"].as_array().map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
        let reply = match tools {
            0 => json_call("c1", "read_file", r#"{"path": "notes.txt"}"#),
            1 => json_call("c2", "write_file", r#"{"path": "out.txt", "content": "written once"}"#),
            _ => json_text("all done"),
        };
        reply.after(Duration::from_millis(400))
    })
    .await;
    let looprail = |args: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_looprail"));
        command.args(args).env("OPENAI_API_KEY", "sk-test").env_remove("LOOPRAIL_STORE");
        command
    };
    let (base, work, config) = (
        format!("{}/v1", model.url),
        dir.join("work").display().to_string(),
        dir.join("fast.toml").display().to_string(),
    );
    let out = looprail(&[
        "submit",
        "--provider",
        "openai",
        "--model",
        "m",
        "--base-url",
        &base,
        "--no-stream",
        "--store",
        &url,
        "--workdir",
        &work,
        "--config",
        &config,
        "write it",
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let run_id = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let log = std::fs::File::create(dir.join("worker.log")).unwrap();
    let mut worker = looprail(&["worker", "--store", &url, "--poll-ms", "50", "--stale-after-secs", "3"])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();

    let started = Instant::now();
    while model.requests().is_empty() {
        assert!(started.elapsed() < Duration::from_secs(30), "the worker never called the model");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The model is answering its first call: the database goes away for 12 s.
    tokio::task::spawn_blocking(move || server.restart(Duration::from_secs(12))).await.unwrap();

    let store = PostgresStore::connect(&url).await.unwrap();
    let row = loop {
        let row = store.run(&run_id).await.unwrap().unwrap();
        if row.status.is_final() || row.status == RunStatus::WaitingOnHuman {
            break row;
        }
        assert!(started.elapsed() < Duration::from_secs(90), "the run never finished: {row:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let _ = Command::new("kill").args(["-TERM", &worker.id().to_string()]).status();
    worker.wait().unwrap();
    let worker_log = std::fs::read_to_string(dir.join("worker.log")).unwrap();
    assert_eq!(row.status, RunStatus::Completed, "{row:?}\n{worker_log}");
    assert!(
        row.takeovers >= 1,
        "the run went on from its checkpoint after the restart: {row:?}\n{worker_log}"
    );
    assert_eq!(store.final_outcome(&run_id).await.unwrap().unwrap().final_text, "all done");
    assert_eq!(std::fs::read_to_string(dir.join("work/out.txt")).unwrap(), "written once");
    let attempts: Vec<(i64,)> = looprail_testkit_postgres::sqlx::query_as(
        "SELECT attempts FROM tool_calls WHERE tool = 'write_file'",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert_eq!(attempts, [(1,)], "the write started once");
    let _ = std::fs::remove_dir_all(dir);
}
