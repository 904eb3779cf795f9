//! Checkpoints (F32, F36): a run restored from any checkpoint the driver wrote finishes with
//! the same conversation as the run that was never interrupted, and guard state survives.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::context::KeepAll;
use looprail_loop_core::engine::RunHeader;
use looprail_loop_core::guards;
use looprail_loop_core::prelude::*;
use looprail_loop_core::store::{CheckpointKind, CheckpointStore, MemoryStore, StoreError, StoredCheckpoint};
use looprail_loop_core::testkit::RecordingTool;

/// Answers by how many assistant messages the request already holds, so a restored run is
/// answered exactly as the original was.
struct ByTurn(Vec<ModelResponse>);

#[async_trait]
impl Provider for ByTurn {
    fn model(&self) -> &str {
        "by-turn"
    }
    async fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelResponse, ProviderError> {
        let turn = request.messages.iter().filter(|m| m.role == Role::Assistant).count();
        Ok(self
            .0
            .get(turn)
            .cloned()
            .unwrap_or_else(|| ModelResponse::text("by-turn", "done"))
            .with_usage(50, 10))
    }
}

#[derive(Default)]
struct EveryCheckpoint(Mutex<Vec<StoredCheckpoint>>);

#[async_trait]
impl CheckpointStore for EveryCheckpoint {
    async fn save(
        &self,
        _run: &str,
        kind: CheckpointKind,
        header: &RunHeader,
        messages: &[Message],
    ) -> Result<(), StoreError> {
        self.0.lock().unwrap().push(StoredCheckpoint {
            kind,
            header: header.clone(),
            messages: messages.to_vec(),
        });
        Ok(())
    }
    async fn latest(&self, _run: &str) -> Result<Option<StoredCheckpoint>, StoreError> {
        Ok(self.0.lock().unwrap().last().cloned())
    }
}

fn script() -> Vec<ModelResponse> {
    vec![
        ModelResponse::tool_calls("by-turn", vec![ToolCall::new("1", "read", "{}")]),
        ModelResponse::tool_calls(
            "by-turn",
            vec![
                ToolCall::new("2", "read", "{}"),
                ToolCall::new("3", "todo_write", r#"{"todos":[{"content":"x","status":"pending"}]}"#),
            ],
        ),
        ModelResponse::text("by-turn", "first try"),
        ModelResponse::tool_calls(
            "by-turn",
            vec![ToolCall::new("4", "todo_write", r#"{"todos":[{"content":"x","status":"completed"}]}"#)],
        ),
        ModelResponse::text("by-turn", "finished"),
    ]
}

fn tools() -> ToolSet {
    ToolSet::new().with(RecordingTool::new("read").idempotent(true)).with(RecordingTool::new("todo_write"))
}

#[tokio::test]
async fn a_run_restored_from_any_checkpoint_ends_like_the_uninterrupted_run() {
    let store = Arc::new(EveryCheckpoint::default());
    let tools = tools();
    let provider = Arc::new(ByTurn(script()));
    let mut run = Run::builder(LoopConfig::default())
        .system("sys")
        .user("go")
        .tools(tools.definitions())
        .build()
        .unwrap();
    let driver = Driver::new(provider.clone(), tools.clone()).with_store(store.clone(), "r1");
    let reference = driver.drive(&mut run).await.unwrap();
    assert_eq!(reference.final_text, "finished");
    let reference_messages = run.messages().to_vec();

    let checkpoints = store.0.lock().unwrap().clone();
    let kinds: Vec<_> = checkpoints.iter().map(|c| c.kind).collect();
    assert_eq!(kinds.first(), Some(&CheckpointKind::Input));
    assert_eq!(kinds.last(), Some(&CheckpointKind::Final));
    assert!(kinds.contains(&CheckpointKind::LlmResponse) && kinds.contains(&CheckpointKind::ToolResult));

    for (i, checkpoint) in checkpoints.iter().enumerate().filter(|(_, c)| c.kind.allows_resume()) {
        let mut restored = Run::restore(
            checkpoint.header.clone(),
            checkpoint.messages.clone(),
            guards::defaults(&LoopConfig::default()),
            Box::new(KeepAll::default()),
        )
        .unwrap();
        let outcome = Driver::new(provider.clone(), tools.clone()).drive(&mut restored).await.unwrap();
        assert_eq!(outcome.final_text, reference.final_text, "checkpoint {i} ({:?})", checkpoint.kind);
        assert_eq!(
            restored.messages(),
            reference_messages.as_slice(),
            "checkpoint {i} ({:?})",
            checkpoint.kind
        );
        assert_eq!(outcome.turns, reference.turns);
    }
}

#[tokio::test]
async fn the_todo_nudge_count_survives_a_restore() {
    // The nudge already sent before the checkpoint is not sent again after the restore.
    let store = Arc::new(MemoryStore::new());
    let tools = tools();
    let provider = Arc::new(ByTurn(script()));
    let mut run = Run::builder(LoopConfig::default()).user("go").tools(tools.definitions()).build().unwrap();
    Driver::new(provider, tools).with_store(store.clone(), "r2").drive(&mut run).await.unwrap();
    let last = store.latest("r2").await.unwrap().unwrap();
    assert_eq!(last.kind, CheckpointKind::Final);
    let nudge_state = &last.header.guards["todo_nudge"];
    assert_eq!(nudge_state["nudges"], 1);
    let restored = Run::restore(
        last.header.clone(),
        last.messages.clone(),
        guards::defaults(&LoopConfig::default()),
        Box::new(KeepAll::default()),
    )
    .unwrap();
    assert_eq!(restored.header().guards["todo_nudge"], *nudge_state);
}

#[test]
fn a_header_that_does_not_match_its_messages_is_refused() {
    let run = Run::builder(LoopConfig::default()).user("go").build().unwrap();
    let header = run.header();
    let err = Run::restore(header, Vec::new(), Vec::new(), Box::new(KeepAll::default())).unwrap_err();
    assert!(err.to_string().contains("corrupt run snapshot"));
}

#[test]
fn a_corrupt_guard_state_is_a_typed_error() {
    let run = Run::builder(LoopConfig::default()).user("go").build().unwrap();
    let mut header = run.header();
    header.guards.insert("time_limits".into(), serde_json::json!({"soft_fired": "yes"}));
    let err = Run::restore(
        header,
        run.messages().to_vec(),
        guards::defaults(&LoopConfig::default()),
        Box::new(KeepAll::default()),
    )
    .unwrap_err();
    assert!(err.to_string().contains("time_limits"), "{err}");
}

#[test]
fn a_header_round_trips_through_json() {
    let run = Run::builder(LoopConfig::default()).system("s").user("go").build().unwrap();
    let header = run.header();
    let json = serde_json::to_string(&header).unwrap();
    let back: RunHeader = serde_json::from_str(&json).unwrap();
    assert_eq!(back, header);
}
