//! Operating durable runs (issue 15): finished runs are never resumed, a waiting run is
//! answered (also from another process), and a shutdown leaves a run resumable.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{ByTurn, calls, temp_db};
use looprail_journal::RunStore as _;
use looprail_journal::{JournalError, Resumed, RunSpec, RunStatus, Runner, SqliteStore, Started, Waiting};
use looprail_loop_core::prelude::*;
use looprail_loop_core::testkit::RecordingTool;
use tokio_util::sync::CancellationToken;

fn ask(question: &str) -> ModelResponse {
    let args = serde_json::json!({ "question": question }).to_string();
    ModelResponse::tool_calls("by-turn", vec![ToolCall::new("q1", "ask_human", args)])
}

fn runner(store: &SqliteStore, script: Vec<ModelResponse>) -> Runner {
    let tools = ToolSet::new().with(RecordingTool::new("read").output("the figures"));
    Runner::new(store.clone(), Arc::new(ByTurn::new(script)), tools, "You write reports.")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_is_answered_from_another_process_and_the_run_goes_on() {
    let path = temp_db("answer");
    let script = vec![ask("Which quarter?"), ModelResponse::text("by-turn", "Here is the Q3 report.")];
    let store = SqliteStore::open(&path).await.unwrap();
    let Started::Ran(paused) =
        runner(&store, script.clone()).start(&RunSpec::new("r", "c", "Report")).await.unwrap()
    else {
        panic!()
    };
    assert_eq!(paused.state, RunState::WaitingOnHuman);
    assert_eq!(store.run("r").await.unwrap().unwrap().status, RunStatus::WaitingOnHuman);
    store.close().await;

    // Another process: it sees what the run waits for, refuses to resume it, answers it.
    let store = SqliteStore::open(&path).await.unwrap();
    let later = runner(&store, script);
    assert_eq!(
        later.waiting_for("r").await.unwrap(),
        Waiting::Question { question: "Which quarter?".into() }
    );
    let refused = later.resume("r").await.unwrap_err();
    assert!(matches!(refused, JournalError::WaitsOnHuman { .. }), "{refused}");
    let outcome = later.answer("r", "Q3, please").await.unwrap();
    assert_eq!(outcome.state, RunState::Completed);
    assert_eq!(outcome.final_text, "Here is the Q3 report.");
    let row = store.run("r").await.unwrap().unwrap();
    assert_eq!(row.status, RunStatus::Completed);
    let checkpoint = store.latest_checkpoint("r").await.unwrap().unwrap();
    let answer =
        checkpoint.messages.iter().flat_map(Message::tool_results).find(|r| r.content == "Q3, please");
    assert!(answer.is_some(), "the answer is the ask_human call's result");

    // Neither answered twice nor resumed once finished.
    let again = later.answer("r", "Q4").await.unwrap_err();
    assert!(matches!(again, JournalError::NotWaiting { .. }), "{again}");
    let finished = later.resume("r").await.unwrap_err();
    assert!(matches!(finished, JournalError::Finished { status: RunStatus::Completed, .. }), "{finished}");
    let _ = std::fs::remove_file(path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_refuses_finished_queued_and_live_runs() {
    let path = temp_db("refuse");
    let store = SqliteStore::open(&path).await.unwrap();
    let runner = runner(&store, vec![]);
    for (i, status) in [RunStatus::Failed, RunStatus::Cancelled, RunStatus::TimedOut].into_iter().enumerate()
    {
        let id = format!("done-{i}");
        store.submit(&RunSpec::new(&id, &id, "x")).await.unwrap();
        store.set_status(&id, status).await.unwrap();
        let err = runner.resume(&id).await.unwrap_err();
        assert!(matches!(err, JournalError::Finished { status: s, .. } if s == status), "{err}");
        assert!(err.to_string().contains(status.as_str()), "the error names the status: {err}");
    }
    // A live run: its heartbeat is fresh.
    store.submit(&RunSpec::new("live", "lane", "x")).await.unwrap();
    store.heartbeat("live", looprail_journal::now_ms()).await.unwrap();
    let err = runner.resume("live").await.unwrap_err();
    assert!(matches!(err, JournalError::HeldByWorker { .. }), "{err}");
    // A queued run has not started.
    store.submit(&RunSpec::new("behind", "lane", "y")).await.unwrap();
    let err = runner.resume("behind").await.unwrap_err();
    assert!(matches!(err, JournalError::NotResumable { .. }), "{err}");
    assert_eq!(store.run("behind").await.unwrap().unwrap().status, RunStatus::Queued, "left as it was");
    let _ = std::fs::remove_file(path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_stops_at_a_boundary_and_leaves_the_run_resumable() {
    let path = temp_db("shutdown");
    let store = SqliteStore::open(&path).await.unwrap();
    let script = vec![calls("c1", "read"), ModelResponse::text("by-turn", "finished")];
    let mut blocking = ByTurn::new(script.clone());
    blocking.block_at = Some(1);
    let blocked = blocking.blocked.clone();
    let shutdown = CancellationToken::new();
    let tools = ToolSet::new().with(RecordingTool::new("read").output("the figures"));
    let first = Runner::new(store.clone(), Arc::new(blocking), tools, "You write reports.")
        .with_shutdown(shutdown.clone());
    let task = tokio::spawn(async move { first.start(&RunSpec::new("r", "c", "Report")).await });
    blocked.notified().await;
    shutdown.cancel();
    let Started::Ran(stopped) =
        tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap().unwrap()
    else {
        panic!()
    };
    assert_eq!(stopped.state, RunState::Cancelled);
    let row = store.run("r").await.unwrap().unwrap();
    assert_eq!(row.status, RunStatus::Interrupted);
    assert!(row.resume_available);
    let Resumed::Ran(outcome) = runner(&store, script).resume("r").await.unwrap() else { panic!() };
    assert_eq!(outcome.final_text, "finished");
    assert_eq!(store.run("r").await.unwrap().unwrap().status, RunStatus::Completed);
    let _ = std::fs::remove_file(path);
}
