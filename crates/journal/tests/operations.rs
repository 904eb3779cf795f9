//! Lanes, heartbeats, cancel requests, the reconciler, the run journal, and bad stored data
//! (issue 8).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use common::{ByTurn, calls, temp_db};
use looprail_journal::RunStore as _;
use looprail_journal::{JournalError, RunSpec, RunStatus, Runner, SqliteStore, Started, Submitted};
use looprail_loop_core::prelude::*;
use looprail_loop_core::testkit::RecordingTool;

/// Answers after a pause, noting which run asked and when (runs are told apart by their input).
struct Timed {
    log: Arc<Mutex<Vec<(String, &'static str)>>>,
}

#[async_trait]
impl Provider for Timed {
    fn model(&self) -> &str {
        "timed"
    }
    async fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelResponse, ProviderError> {
        let input = request
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .and_then(Message::joined_text)
            .unwrap_or_default();
        self.log.lock().unwrap().push((input.clone(), "start"));
        tokio::time::sleep(Duration::from_millis(15)).await;
        self.log.lock().unwrap().push((input.clone(), "end"));
        Ok(ModelResponse::text("timed", format!("answered {input}")))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_active_run_per_lane_every_queued_run_once_in_submission_order() {
    let path = temp_db("lanes");
    let store = SqliteStore::open(&path).await.unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let runner =
        Arc::new(Runner::new(store.clone(), Arc::new(Timed { log: log.clone() }), ToolSet::new(), "sys"));
    let mut tasks = Vec::new();
    for i in 0..8 {
        let runner = runner.clone();
        tasks.push(tokio::spawn(async move {
            runner.start(&RunSpec::new(format!("run-{i}"), "shared", format!("q{i}"))).await.unwrap()
        }));
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let mut ran = 0;
    for task in tasks {
        if let Started::Ran(_) = task.await.unwrap() {
            ran += 1;
        }
    }
    assert!(ran >= 1);
    let log = log.lock().unwrap().clone();
    // Never two runs at once: every start is followed by its own end.
    for pair in log.chunks(2) {
        assert_eq!(pair[0].0, pair[1].0, "runs overlapped: {log:?}");
        assert_eq!((pair[0].1, pair[1].1), ("start", "end"));
    }
    let order: Vec<String> = log.iter().filter(|(_, e)| *e == "start").map(|(q, _)| q.clone()).collect();
    let runs = store.runs().await.unwrap();
    let by_seq: Vec<String> = runs.iter().map(|r| r.input.clone()).collect();
    assert_eq!(order, by_seq, "each run exactly once, in submission order");
    assert!(runs.iter().all(|r| r.status == RunStatus::Completed));
    // Another conversation's lane is independent.
    assert_eq!(store.submit(&RunSpec::new("other", "elsewhere", "x")).await.unwrap(), Submitted::Started);
    let _ = std::fs::remove_file(path);
}

/// A tool that takes a while, so heartbeats and cancel requests happen during it.
struct Slow;

#[async_trait]
impl Tool for Slow {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new("slow", "slow", serde_json::json!({"type": "object"}))
    }
    fn idempotent(&self) -> bool {
        true
    }
    async fn call(
        &self,
        _a: serde_json::Value,
        _c: looprail_loop_core::tool::ToolContext,
    ) -> Result<looprail_loop_core::tool::ToolOutput, ToolError> {
        tokio::time::sleep(Duration::from_millis(300)).await;
        Ok("slow done".into())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_are_written_and_a_cancel_request_is_observed_at_the_next_boundary() {
    let path = temp_db("cancel");
    let store = SqliteStore::open(&path).await.unwrap();
    let provider = ByTurn::new(vec![
        calls("a", "slow"),
        calls("b", "slow"),
        calls("c", "slow"),
        ModelResponse::text("by-turn", "never"),
    ]);
    let runner = Runner::new(store.clone(), Arc::new(provider), ToolSet::new().with(Slow), "sys")
        .with_heartbeat(Duration::from_millis(25));
    let task = tokio::spawn(async move { runner.start(&RunSpec::new("r", "c", "go")).await.unwrap() });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let beat = store.run("r").await.unwrap().unwrap().heartbeat_at.unwrap();
    assert!(looprail_journal::now_ms() - beat < 200, "the heartbeat is fresh while the run executes");
    store.request_cancel("r", looprail_journal::now_ms()).await.unwrap();
    let Started::Ran(outcome) = task.await.unwrap() else { panic!() };
    assert_eq!(outcome.state, RunState::Cancelled);
    assert!(outcome.tool_calls <= 2, "stopped at the boundary after the batch in flight");
    assert_eq!(store.run("r").await.unwrap().unwrap().status, RunStatus::Cancelled);
    let _ = std::fs::remove_file(path);
}

#[tokio::test]
async fn the_reconciler_times_out_stale_runs_and_cancels_expired_waits() {
    let path = temp_db("reconcile");
    let store = SqliteStore::open(&path).await.unwrap();
    let now = looprail_journal::now_ms();
    // A crashed run with a resumable checkpoint, and one with none.
    for (id, conversation) in [("crashed", "a"), ("bare", "b"), ("waiting", "c"), ("fresh", "d")] {
        store.submit(&RunSpec::new(id, conversation, "x")).await.unwrap();
    }
    let run = Run::builder(LoopConfig::default()).user("x").build().unwrap();
    store
        .save_checkpoint(
            "crashed",
            looprail_loop_core::store::CheckpointKind::LlmResponse,
            &run.header(),
            run.messages(),
        )
        .await
        .unwrap();
    store.heartbeat("crashed", now - 600_000).await.unwrap();
    store.heartbeat("bare", now - 600_000).await.unwrap();
    store.set_status("waiting", RunStatus::WaitingOnHuman).await.unwrap();
    store.request_cancel("waiting", now - 4 * 60_000).await.unwrap();
    store.heartbeat("fresh", now).await.unwrap();
    let report = store.reconcile(now, Duration::from_secs(300), Duration::from_secs(180)).await.unwrap();
    assert_eq!((report.timed_out, report.resumable, report.cancelled), (2, 1, 1));
    let status = |id: &'static str| {
        let store = store.clone();
        async move { store.run(id).await.unwrap().unwrap() }
    };
    assert!(status("crashed").await.resume_available);
    assert!(!status("bare").await.resume_available);
    assert_eq!(status("waiting").await.status, RunStatus::Cancelled);
    assert_eq!(status("fresh").await.status, RunStatus::Running);
    let _ = std::fs::remove_file(path);
}

#[tokio::test]
async fn the_run_journal_is_saved_and_carried_into_the_next_run() {
    let path = temp_db("journal");
    let store = SqliteStore::open(&path).await.unwrap();
    let script = vec![
        ModelResponse::tool_calls(
            "by-turn",
            vec![ToolCall::new(
                "u",
                "update_run_journal",
                r#"{"objective": "Fix the login bug", "handoff_next_action": "Write the test"}"#,
            )],
        ),
        ModelResponse::tool_calls(
            "by-turn",
            vec![ToolCall::new(
                "f",
                "append_run_journal_entry",
                r#"{"section": "verified_findings", "entry": "Tokens expire after 5 min"}"#,
            )],
        ),
        ModelResponse::text("by-turn", "Paused here."),
    ];
    let runner = Runner::new(store.clone(), Arc::new(ByTurn::new(script)), ToolSet::new(), "You fix bugs.");
    runner.start(&RunSpec::new("r1", "conv", "fix login")).await.unwrap();
    let stored = store.load_journal("conv").await.unwrap().unwrap();
    assert_eq!(stored["objective"], "Fix the login bug");
    assert_eq!(stored["verified_findings"][0], "Tokens expire after 5 min");
    let kinds = sqlx::query_scalar::<_, String>("SELECT kind FROM checkpoints WHERE run_id = 'r1'")
        .fetch_all(store.pool())
        .await
        .unwrap();
    assert!(kinds.contains(&"journal_update".to_owned()), "{kinds:?}");

    // The next run of the conversation starts with the digest and the full journal.
    let capture = Arc::new(ByTurn::new(vec![ModelResponse::text("by-turn", "Continuing.")]));
    let next = Runner::new(store.clone(), capture, ToolSet::new(), "You fix bugs.");
    next.start(&RunSpec::new("r2", "conv", "continue")).await.unwrap();
    let checkpoint = store.latest_checkpoint("r2").await.unwrap().unwrap();
    let system = checkpoint.messages[0].joined_text().unwrap();
    assert!(
        system.starts_with("You fix bugs.")
            && system.contains("Objective: Fix the login bug")
            && system.contains("Next: Write the test")
    );
    assert!(
        system.len() < "You fix bugs.".len() + 2 + 500 + 10,
        "the digest is about 500 characters at most"
    );
    let pair = &checkpoint.messages[1..3];
    assert_eq!(pair[0].internal.as_ref().unwrap().reason, "run_journal");
    assert!(pair[0].joined_text().unwrap().contains("- Tokens expire after 5 min"));
    assert_eq!(pair[1].role, Role::Assistant);
    let _ = std::fs::remove_file(path);
}

#[tokio::test]
async fn corrupt_rows_and_a_newer_schema_are_typed_errors() {
    let path = temp_db("corrupt");
    let store = SqliteStore::open(&path).await.unwrap();
    let run = Run::builder(LoopConfig::default()).user("x").build().unwrap();
    store
        .save_checkpoint("r", looprail_loop_core::store::CheckpointKind::Input, &run.header(), run.messages())
        .await
        .unwrap();
    sqlx::query("UPDATE checkpoints SET header = '{\"truncated'").execute(store.pool()).await.unwrap();
    let err = store.latest_resumable("r").await.unwrap_err();
    assert!(matches!(err, JournalError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("checkpoint 1 of run r"));

    store
        .save_checkpoint("r", looprail_loop_core::store::CheckpointKind::Input, &run.header(), run.messages())
        .await
        .unwrap();
    sqlx::query("DELETE FROM messages WHERE run_id = 'r'").execute(store.pool()).await.unwrap();
    assert!(
        matches!(store.latest_resumable("r").await.unwrap_err(), JournalError::Corrupt { .. }),
        "missing messages are noticed"
    );

    sqlx::query("INSERT INTO tool_calls (run_id, tool_call_id, tool, arguments, started_at, completed_at, result) VALUES ('r', 'c', 't', '{}', 1, 2, 'not json')")
        .execute(store.pool())
        .await
        .unwrap();
    assert!(matches!(store.tool_call("r", "c").await.unwrap_err(), JournalError::Corrupt { .. }));
    sqlx::query("UPDATE runs SET status = 'exploded' WHERE run_id = 'r'")
        .execute(store.pool())
        .await
        .unwrap();
    assert!(store.run("r").await.unwrap_err().to_string().contains("unknown status `exploded`"));

    sqlx::query("INSERT INTO schema_version (version) VALUES (99)").execute(store.pool()).await.unwrap();
    store.close().await;
    let err = SqliteStore::open(&path).await.unwrap_err();
    assert!(matches!(err, JournalError::SchemaTooNew { found: 99, .. }), "{err}");
    let _ = std::fs::remove_file(path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_locked_elsewhere_is_retried_then_reported() {
    let path = temp_db("locked");
    let holder = SqliteStore::open(&path).await.unwrap();
    let mut lock = holder.pool().acquire().await.unwrap();
    sqlx::query("BEGIN EXCLUSIVE").execute(&mut *lock).await.unwrap();
    let other = SqliteStore::open_with(&path, Duration::from_millis(300)).await;
    let started = std::time::Instant::now();
    let err = match other {
        Err(e) => e,
        Ok(store) => store.submit(&RunSpec::new("x", "c", "x")).await.unwrap_err(),
    };
    assert!(matches!(err, JournalError::Locked { .. }), "{err}");
    assert!(started.elapsed() >= Duration::from_millis(250), "it waited for the lock before giving up");
    sqlx::query("ROLLBACK").execute(&mut *lock).await.unwrap();
    drop(lock);
    let _ = std::fs::remove_file(path);
}

#[tokio::test]
async fn child_runs_get_their_own_lane_and_depth_is_capped() {
    let path = temp_db("child");
    let store = SqliteStore::open(&path).await.unwrap();
    let runner = Runner::new(
        store.clone(),
        Arc::new(ByTurn::new(vec![])),
        ToolSet::new().with(RecordingTool::new("t")),
        "sys",
    );
    assert!(matches!(runner.start(&RunSpec::new("parent", "p", "x")).await.unwrap(), Started::Ran(_)));
    let child = RunSpec {
        run_id: "child".into(),
        lane: "conversation:child-1".into(),
        input: "sub".into(),
        parent_run_id: Some("parent".into()),
        depth: 4,
        recipe: None,
    };
    let err = runner.start(&child).await.unwrap_err();
    assert!(err.to_string().contains("delegation depth 4 exceeds the maximum of 3"), "{err}");
    assert!(store.run("child").await.unwrap().is_none(), "a refused child never claims a lane");
    let ok = RunSpec {
        run_id: "child2".into(),
        lane: "conversation:child-2".into(),
        input: "sub".into(),
        parent_run_id: Some("parent".into()),
        depth: 1,
        recipe: None,
    };
    assert!(matches!(runner.start(&ok).await.unwrap(), Started::Ran(_)));
    assert_eq!(store.run("child2").await.unwrap().unwrap().parent_run_id.as_deref(), Some("parent"));
    let _ = std::fs::remove_file(path);
}

#[tokio::test]
async fn updates_to_a_run_or_call_that_does_not_exist_name_it() {
    let path = temp_db("unknown");
    let store = SqliteStore::open(&path).await.unwrap();
    let unknown = |r: Result<(), JournalError>| match r {
        Err(JournalError::UnknownRun(what)) => what,
        other => panic!("expected UnknownRun, got {other:?}"),
    };
    assert_eq!(unknown(store.set_status("ghost", RunStatus::Completed).await), "ghost");
    assert_eq!(unknown(store.request_cancel("ghost", 1).await), "ghost");
    assert_eq!(unknown(store.resolve_tool_call("ghost", "call_1", "done", false).await), "ghost / call_1");
    assert!(store.run("ghost").await.unwrap().is_none(), "a failed update creates nothing");
}

#[tokio::test]
async fn a_started_run_announces_itself_once() {
    let path = temp_db("started-once");
    let store = SqliteStore::open(&path).await.unwrap();
    let (sink, mut rx) = EventSink::channel();
    let provider = ByTurn::new(vec![ModelResponse::text("by-turn", "hi")]);
    let runner = Runner::new(store, Arc::new(provider), ToolSet::new(), "sys").with_events(sink);
    let Started::Ran(_) = runner.start(&RunSpec::new("once", "c", "hello")).await.unwrap() else { panic!() };
    let mut started = 0;
    while let Ok(event) = rx.try_recv() {
        started += usize::from(event.name() == "agent_run.started");
    }
    assert_eq!(started, 1, "agent_run.started is emitted once per run start, not by runner and driver both");
    let _ = std::fs::remove_file(path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journals_written_at_once_from_many_tasks_all_land_and_a_closed_store_refuses_more() {
    let path = temp_db("journal-writer");
    let store = SqliteStore::open(&path).await.unwrap();
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let key = format!("k{i}");
                let (first, second) = (serde_json::json!({"n": 0}), serde_json::json!({"n": 1}));
                assert!(store.swap_journal(&key, None, &first).await.unwrap());
                assert!(!store.swap_journal(&key, None, &second).await.unwrap(), "a stale swap is refused");
                assert!(store.swap_journal(&key, Some(&first), &second).await.unwrap());
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    // Another process on the same file reads every document as last written.
    let other = SqliteStore::open(&path).await.unwrap();
    let keys: Vec<String> = (0..16).map(|i| format!("k{i}")).collect();
    let found = other.load_journals(&keys).await.unwrap();
    assert_eq!(found.len(), 16);
    assert!(found.iter().all(|(_, body)| body["n"] == 1), "{found:?}");
    store.close().await;
    assert!(store.save_journal("k0", &serde_json::json!({"n": 2})).await.is_err(), "closed: no write");
    assert_eq!(other.load_journal("k0").await.unwrap().unwrap()["n"], 1);
}
