//! A crash in a separate process (SIGKILL while a side-effecting tool runs), then resume from
//! the same SQLite file: the effect is not repeated and the run waits for a human (issue 8).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{ByTurn, EffectTool, Effects, calls};
use looprail_journal::RunStore as _;
use looprail_journal::{Resumed, RunSpec, RunStatus, Runner, SqliteStore};
use looprail_loop_core::prelude::*;

const CHILD_ENV: &str = "LOOPRAIL_CRASH_CHILD_DB";

fn script() -> Vec<ModelResponse> {
    vec![calls("s1", "send"), ModelResponse::text("by-turn", "sent")]
}

/// The child: runs until the side-effecting tool is mid-call, marks the effect on disk, and
/// waits to be killed. Does nothing unless started by the parent test.
#[tokio::test]
async fn crash_child() {
    let Ok(db) = std::env::var(CHILD_ENV) else { return };
    let store = SqliteStore::open(std::path::Path::new(&db)).await.unwrap();
    let effects = Effects::default();
    let mut send = EffectTool::new("send", false, effects);
    send.hang_on = Some("s1".into());
    let hanging = send.hanging.clone();
    let runner = Runner::new(store, Arc::new(ByTurn::new(script())), ToolSet::new().with(send), "sys");
    tokio::spawn(async move {
        hanging.notified().await;
        std::fs::write(format!("{db}.effect"), "1").unwrap();
    });
    let _ = runner.start(&RunSpec::new("run", "c", "send it")).await;
}

#[tokio::test]
async fn a_killed_process_leaves_a_resumable_run_that_does_not_resend() {
    let db = common::temp_db("child");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        // The test's name in this binary: its module's path without the crate's name.
        .args([
            "--exact",
            &format!("{}::crash_child", module_path!().split_once("::").unwrap().1),
            "--nocapture",
        ])
        .env(CHILD_ENV, &*db)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let marker = std::path::PathBuf::from(format!("{}.effect", db.display()));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !marker.exists() {
        assert!(std::time::Instant::now() < deadline, "the child never reached the tool");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().unwrap(); // SIGKILL: no cleanup, no final checkpoint
    child.wait().unwrap();

    let store = SqliteStore::open(&db).await.unwrap();
    // The envelope keys calls by the engine's id: the run's first call is `lr-0`.
    let row = store.tool_call("run", "lr-0").await.unwrap().unwrap();
    assert!(row.completed.is_none(), "started before the kill, never completed");
    let report = store
        .reconcile(looprail_journal::now_ms() + 600_000, Duration::from_secs(300), Duration::from_secs(180))
        .await
        .unwrap();
    assert_eq!((report.timed_out, report.resumable), (1, 1));

    let effects = Effects::default();
    let send = EffectTool::new("send", false, effects.clone());
    let (sink, mut rx) = EventSink::channel();
    let runner =
        Runner::new(store.clone(), Arc::new(ByTurn::new(script())), ToolSet::new().with(send), "sys")
            .with_events(sink);
    let Resumed::Ran(outcome) = runner.resume("run").await.unwrap() else { panic!("must run") };
    assert_eq!(outcome.state, RunState::WaitingOnHuman);
    assert!(matches!(outcome.stop, StopCause::ResumeUnsafe { .. }));
    assert_eq!(effects.count("s1"), 0, "the send was not repeated");
    assert_eq!(store.run("run").await.unwrap().unwrap().status, RunStatus::WaitingOnHuman);
    let mut unsafe_event = false;
    while let Ok(event) = rx.try_recv() {
        unsafe_event |= event.name() == "agent_run.resume_unsafe";
    }
    assert!(unsafe_event, "agent_run.resume_unsafe was published");
    let _ = std::fs::remove_file(&marker);
    let _ = std::fs::remove_file(&db);
}
