//! `looprail worker` keeps to the config file's `[journal]` section (F40; issue 40): each key it
//! reads takes effect, a flag wins over the file, and the file over the default. What each key
//! does is seen in what the worker's reconciler does to a store prepared for it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{TempDir, looprail, temp_dir};
use looprail_journal::{RunSpec, RunStatus, RunStore, SqliteStore, now_ms};

/// A store holding a run whose process went silent 20 s ago, and a run waiting on a human
/// whose cancel request is 90 s old. Both are library runs (no recipe): the worker reconciles
/// them but executes neither.
async fn prepared(dir: &TempDir) -> String {
    let path = dir.join("runs.db");
    let store = SqliteStore::open(&path).await.unwrap();
    let now = now_ms();
    store.submit(&RunSpec::new("silent", "a", "task")).await.unwrap();
    store.heartbeat("silent", now - 20_000).await.unwrap();
    store.submit(&RunSpec::new("waiting", "b", "task")).await.unwrap();
    store.set_status("waiting", RunStatus::WaitingOnHuman).await.unwrap();
    store.request_cancel("waiting", now - 90_000).await.unwrap();
    path.display().to_string()
}

fn config(dir: &TempDir, journal: &str) -> String {
    let path = dir.join("looprail.toml");
    std::fs::write(&path, format!("[journal]\n{journal}")).unwrap();
    path.display().to_string()
}

/// Runs the worker until it is idle; returns (runs timed out, runs cancelled) of its
/// start-up reconcile.
async fn reconciled(store: &str, extra: &[&str]) -> (u64, u64) {
    let mut args = vec!["worker".to_owned(), "--store".into(), store.to_owned(), "--exit-when-idle".into()];
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let out = looprail(args).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let line = stderr.lines().find(|l| l.starts_with("[worker] reconciled:")).expect("a reconcile line");
    let numbers: Vec<u64> =
        line.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect();
    (numbers[0], numbers[2])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_after_and_cancel_timeout_come_from_the_file_unless_a_flag_says_otherwise() {
    // The defaults (60 s, 180 s): neither run is old enough.
    let dir = temp_dir("worker-defaults");
    assert_eq!(reconciled(&prepared(&dir).await, &[]).await, (0, 0));

    // The file's keys: 10 s of silence is a dead process, a 60 s old cancel request expires.
    let dir = temp_dir("worker-file");
    let store = prepared(&dir).await;
    let file = config(&dir, "heartbeat_secs = 1\nstale_after_secs = 10\ncancel_timeout_secs = 60\n");
    assert_eq!(reconciled(&store, &["--config", &file]).await, (1, 1));
    let store = SqliteStore::open(&dir.join("runs.db")).await.unwrap();
    assert_eq!(store.run("silent").await.unwrap().unwrap().status, RunStatus::TimedOut);
    assert_eq!(store.run("waiting").await.unwrap().unwrap().status, RunStatus::Cancelled);

    // A flag wins over the file.
    let dir = temp_dir("worker-flag");
    let store = prepared(&dir).await;
    let file = config(&dir, "heartbeat_secs = 1\nstale_after_secs = 10\ncancel_timeout_secs = 60\n");
    assert_eq!(reconciled(&store, &["--config", &file, "--stale-after-secs", "60"]).await, (0, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reconcile_interval_comes_from_the_file_unless_a_flag_says_otherwise() {
    let dir = temp_dir("worker-interval");
    let store = prepared(&dir).await;
    let file = config(&dir, "reconcile_interval_secs = 1\n");
    // Every second by the file: a second reconcile comes while the worker idles.
    let mut worker = Command::new(env!("CARGO_BIN_EXE_looprail"))
        .args(["worker", "--store", &store, "--config", &file, "--poll-ms", "100"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = worker.stderr.take().unwrap();
    let reader = tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let mut seen = Vec::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            seen.push(line);
            let reconciles = seen.iter().filter(|l| l.starts_with("[worker] reconciled:")).count();
            if reconciles >= 2 || started.elapsed() > Duration::from_secs(30) {
                break;
            }
        }
        seen
    });
    let seen =
        tokio::time::timeout(Duration::from_secs(40), reader).await.expect("the worker spoke").unwrap();
    let _ = worker.kill();
    let _ = worker.wait();
    let reconciles = seen.iter().filter(|l| l.starts_with("[worker] reconciled:")).count();
    assert_eq!(reconciles, 2, "a second reconcile, a second after the first: {seen:?}");
    assert!(seen.iter().any(|l| l.contains("reconciles every 1 s")), "{seen:?}");

    // The flag wins over the file.
    let out = looprail(
        ["worker", "--store", &store, "--config", &file, "--reconcile-secs", "300", "--exit-when-idle"]
            .map(str::to_owned)
            .to_vec(),
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("reconciles every 300 s"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_journal_section_is_one_clear_error() {
    let dir = temp_dir("worker-bad");
    let store = prepared(&dir).await;
    // Three heartbeats at least before a process counts as dead.
    let file = config(&dir, "heartbeat_secs = 10\nstale_after_secs = 5\n");
    let out = looprail(["worker", "--store", &store, "--config", &file].map(str::to_owned).to_vec()).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "the command failed: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("journal.stale_after_secs"), "{stderr}");
}
