//! What a store keeps: runs and lanes, checkpoints, the envelope, journals, the reconciler.

use std::time::Duration;

use looprail_journal::{JournalError, MAX_TAKEOVERS, RunSpec, RunStatus, Submitted, now_ms};
use looprail_loop_core::prelude::*;
use looprail_loop_core::store::CheckpointKind;

use crate::conformance::Backend;

fn spec(run: &str, conversation: &str) -> RunSpec {
    RunSpec::new(run, conversation, format!("task {run}")).with_recipe(serde_json::json!({ "model": "m" }))
}

pub async fn runs_lanes_and_statuses(backend: Backend) {
    let store = backend.open().await;
    assert_eq!(store.submit(&spec("a1", "a")).await.unwrap(), Submitted::Started);
    assert_eq!(
        store.submit(&spec("a2", "a")).await.unwrap(),
        Submitted::Queued { ahead: 0, dispatched: None }
    );
    assert_eq!(
        store.submit(&spec("a3", "a")).await.unwrap(),
        Submitted::Queued { ahead: 1, dispatched: None }
    );
    store.enqueue(&spec("b1", "b")).await.unwrap();
    assert_eq!(store.due_lanes().await.unwrap(), vec!["conversation:b".to_owned()]);
    assert!(!store.claim_run("a2").await.unwrap(), "a1 holds lane a");
    assert!(store.claim_run("b1").await.unwrap());
    let row = store.run("a1").await.unwrap().unwrap();
    assert_eq!((row.status, row.worker.as_deref()), (RunStatus::Running, Some("w1")));
    assert_eq!(row.recipe, Some(serde_json::json!({ "model": "m" })));

    // An interrupted run keeps its lane; finishing hands the lane to the next run in order.
    store.set_status("a1", RunStatus::Interrupted).await.unwrap();
    assert!(store.run("a1").await.unwrap().unwrap().resume_available);
    assert_eq!(store.claim_next("conversation:a").await.unwrap(), None);
    assert_eq!(store.finish("a1", RunStatus::Completed).await.unwrap().as_deref(), Some("a2"));
    assert_eq!(store.finish("a2", RunStatus::Failed).await.unwrap().as_deref(), Some("a3"));
    assert!(!store.claim("a2", &[RunStatus::Interrupted]).await.unwrap(), "a2 ended: not claimable");

    store.request_cancel("a3", 7).await.unwrap();
    store.request_cancel("a3", 9).await.unwrap();
    // A run that ended takes no request: the error says its state, and nothing changes.
    match store.request_cancel("a1", 11).await {
        Err(JournalError::AlreadyEnded { run_id, status }) => {
            assert_eq!((run_id.as_str(), status), ("a1", RunStatus::Completed));
        }
        other => panic!("cancelling a completed run: {other:?}"),
    }
    assert_eq!(store.run("a1").await.unwrap().unwrap().cancel_requested_at, None);
    assert!(matches!(store.request_cancel("nobody", 11).await, Err(JournalError::UnknownRun(_))));
    assert_eq!(
        store.run("a3").await.unwrap().unwrap().cancel_requested_at,
        Some(7),
        "the first request counts"
    );
    assert!(store.cancel_requested("a3").await.unwrap());
    let order: Vec<String> = store.runs().await.unwrap().into_iter().map(|r| r.run_id).collect();
    assert_eq!(order, ["a1", "a2", "a3", "b1"]);
    assert!(matches!(store.set_status("nope", RunStatus::Failed).await, Err(JournalError::UnknownRun(_))));
    assert!(matches!(store.claim("nope", &[RunStatus::Queued]).await, Err(JournalError::UnknownRun(_))));
    assert!(store.submit(&spec("a1", "a")).await.is_err(), "a run id is unique");
}

fn exchange(i: usize) -> [Message; 2] {
    [
        Message::assistant_with_calls(None, vec![ToolCall::new(format!("c{i}"), "read", "{}")]),
        Message::tool_result(ToolResult::ok(format!("c{i}"), format!("result {i}"))),
    ]
}

pub async fn checkpoints_store_only_new_messages_and_survive_rewrites(backend: Backend) {
    let store = backend.open().await;
    let run = Run::builder(LoopConfig::default()).user("go").build().unwrap();
    let mut messages = run.messages().to_vec();
    store.save_checkpoint("r", CheckpointKind::Input, &run.header(), &messages).await.unwrap();
    for i in 0..3 {
        messages.extend(exchange(i));
        store.save_checkpoint("r", CheckpointKind::ToolResult, &run.header(), &messages).await.unwrap();
    }
    let latest = store.latest_checkpoint("r").await.unwrap().unwrap();
    assert_eq!((latest.kind, latest.messages.clone()), (CheckpointKind::ToolResult, messages.clone()));

    // A rewrite (compaction) replaces the history; a changed last message is noticed too.
    let compacted = vec![messages[0].clone(), Message::user("summary of the work so far")];
    store.save_checkpoint("r", CheckpointKind::Compaction, &run.header(), &compacted).await.unwrap();
    assert_eq!(store.latest_checkpoint("r").await.unwrap().unwrap().messages, compacted);
    let mut edited = compacted.clone();
    edited[1] = Message::user("another summary");
    edited.extend(exchange(9));
    store.save_checkpoint("r", CheckpointKind::ToolResult, &run.header(), &edited).await.unwrap();
    assert_eq!(store.latest_checkpoint("r").await.unwrap().unwrap().messages, edited);

    // The resumable view skips a final checkpoint; a run that never saved has none.
    store.save_checkpoint("r", CheckpointKind::Final, &run.header(), &edited).await.unwrap();
    assert_eq!(store.latest_checkpoint("r").await.unwrap().unwrap().kind, CheckpointKind::Final);
    assert_eq!(store.latest_resumable("r").await.unwrap().unwrap().kind, CheckpointKind::ToolResult);
    assert!(store.latest_checkpoint("none").await.unwrap().is_none());
    let row = store.run("r").await.unwrap().unwrap();
    assert_eq!((row.lane.as_str(), row.status), ("run:r", RunStatus::Running), "recorded on the fly");
}

pub async fn the_envelope_records_starts_results_and_human_verdicts(backend: Backend) {
    let store = backend.open().await;
    store.submit(&spec("r", "c")).await.unwrap();
    let call = ToolCall::new("lr-0", "send", r#"{"to": "bob"}"#);
    assert!(store.tool_call("r", "lr-0").await.unwrap().is_none());
    store.start_tool_call("r", &call).await.unwrap();
    let started = store.tool_call("r", "lr-0").await.unwrap().unwrap();
    assert_eq!((started.tool.as_str(), started.completed.is_none()), ("send", true));
    assert_eq!(store.unfinished_tool_calls("r").await.unwrap(), [("lr-0".to_owned(), "send".to_owned())]);
    store.complete_tool_call("r", &ToolResult::ok("lr-0", "sent")).await.unwrap();
    assert_eq!(
        store.tool_call("r", "lr-0").await.unwrap().unwrap().completed,
        Some(ToolResult::ok("lr-0", "sent"))
    );
    assert!(store.forget_tool_call("r", "lr-0").await.is_err(), "a completed call is never forgotten");

    store.start_tool_call("r", &ToolCall::new("lr-1", "send", "{}")).await.unwrap();
    store.start_tool_call("r", &ToolCall::new("lr-2", "send", "{}")).await.unwrap();
    store.resolve_tool_call("r", "lr-1", "it was sent", false).await.unwrap();
    assert_eq!(
        store.tool_call("r", "lr-1").await.unwrap().unwrap().completed,
        Some(ToolResult::ok("lr-1", "it was sent"))
    );
    store.forget_tool_call("r", "lr-2").await.unwrap();
    assert!(store.tool_call("r", "lr-2").await.unwrap().is_none());
    assert!(store.unfinished_tool_calls("r").await.unwrap().is_empty());
    assert!(store.resolve_tool_call("r", "lr-9", "x", true).await.is_err(), "an unknown call is named");
}

pub async fn journals_are_kept_per_conversation(backend: Backend) {
    let store = backend.open().await;
    let expected = match backend {
        Backend::Sqlite(_) => "sqlite",
        Backend::Postgres(_) => "postgres",
    };
    assert_eq!((store.backend(), store.worker()), (expected, "w1"));
    assert!(store.load_journal("c").await.unwrap().is_none());
    store.save_journal("c", &serde_json::json!({ "notes": ["one"] })).await.unwrap();
    store.save_journal("c", &serde_json::json!({ "notes": ["one", "two"] })).await.unwrap();
    store.save_journal("d", &serde_json::json!({ "notes": [] })).await.unwrap();
    assert_eq!(store.load_journal("c").await.unwrap(), Some(serde_json::json!({ "notes": ["one", "two"] })));
    // Another process sees it.
    let other = backend.open_as("w2").await;
    assert_eq!(other.load_journal("d").await.unwrap(), Some(serde_json::json!({ "notes": [] })));

    // Several at once: one transaction in, one query out.
    let entries =
        vec![("k/1".to_owned(), serde_json::json!(1)), ("k/2".to_owned(), serde_json::json!({ "a": 2 }))];
    store.save_journals(&entries).await.unwrap();
    store.save_journals(&[("k/1".to_owned(), serde_json::json!("one"))]).await.unwrap();
    let keys: Vec<String> = ["k/1", "k/2", "k/missing"].iter().map(|k| (*k).to_owned()).collect();
    let mut found = other.load_journals(&keys).await.unwrap();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        found,
        [("k/1".to_owned(), serde_json::json!("one")), ("k/2".to_owned(), serde_json::json!({ "a": 2 }))]
    );
    assert!(other.load_journals(&[]).await.unwrap().is_empty());
    // A batch larger than one statement holds (SQLite splits it, inside one transaction).
    let many: Vec<(String, serde_json::Value)> =
        (0..700).map(|i| (format!("batch/{i:03}"), serde_json::json!({ "i": i }))).collect();
    store.save_journals(&many).await.unwrap();
    let keys: Vec<String> = many.iter().map(|(k, _)| k.clone()).collect();
    let mut found = other.load_journals(&keys).await.unwrap();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(found, many);
}

pub async fn the_reconciler_times_out_stale_runs_and_cancels_expired_waits(backend: Backend) {
    let store = backend.open().await;
    let now = now_ms();
    for (id, conversation) in [("crashed", "a"), ("bare", "b"), ("waiting", "c"), ("fresh", "d")] {
        store.submit(&spec(id, conversation)).await.unwrap();
    }
    // A run no worker can take over (no recipe: it was started in a process of its own).
    store.submit(&RunSpec::new("library", "e", "task")).await.unwrap();
    store.enqueue(&spec("next", "a")).await.unwrap();
    let run = Run::builder(LoopConfig::default()).user("x").build().unwrap();
    store
        .save_checkpoint("crashed", CheckpointKind::LlmResponse, &run.header(), run.messages())
        .await
        .unwrap();
    for id in ["crashed", "bare", "library"] {
        store.heartbeat(id, now - 600_000).await.unwrap();
    }
    store.set_status("waiting", RunStatus::WaitingOnHuman).await.unwrap();
    store.request_cancel("waiting", now - 4 * 60_000).await.unwrap();
    store.heartbeat("fresh", now).await.unwrap();
    let report = store.reconcile(now, Duration::from_secs(300), Duration::from_secs(180)).await.unwrap();
    assert_eq!((report.timed_out, report.resumable, report.cancelled, report.due), (2, 1, 1, 1));
    let row = |id: &'static str| {
        let store = store.clone();
        async move { store.run(id).await.unwrap().unwrap() }
    };
    assert!(row("crashed").await.resume_available);
    assert_eq!(row("crashed").await.status, RunStatus::TimedOut);
    assert_eq!(
        (row("library").await.status, row("library").await.resume_available),
        (RunStatus::TimedOut, false)
    );
    // A worker's run that never checkpointed is not timed out for good: a take-over starts it
    // from its recipe (as it closes one whose end was recorded before its worker died).
    assert_eq!(row("bare").await.status, RunStatus::Running, "left to a take-over");
    assert_eq!(row("waiting").await.status, RunStatus::Cancelled);
    assert_eq!(row("fresh").await.status, RunStatus::Running);
    assert_eq!(row("next").await.status, RunStatus::Queued, "due runs are counted, not started");
    let stale_before = now - 300_000;
    let mut taken = Vec::new();
    while let Some(id) = store.take_over(stale_before, MAX_TAKEOVERS).await.unwrap() {
        taken.push(id);
    }
    taken.sort();
    assert_eq!(taken, ["bare", "crashed"], "the workers' runs go on; the library's does not");
}
