//! Recording a run's model calls and replaying them deterministically.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;

use looprail_loop_core::prelude::*;
use looprail_loop_core::testkit::{RecordingTool, ScriptedProvider};
use looprail_providers::{Recorder, Replay};

fn temp_file(name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    std::env::temp_dir().join(format!("looprail-{name}-{}-{nanos}.jsonl", std::process::id()))
}

fn tools() -> ToolSet {
    ToolSet::new().with(RecordingTool::new("search").idempotent(true).output("3 results"))
}

async fn run(provider: Arc<dyn Provider>, question: &str) -> (Outcome, Vec<Message>) {
    let tools = tools();
    let mut run =
        Run::builder(LoopConfig::default()).user(question).tools(tools.definitions()).build().unwrap();
    let outcome = Driver::new(provider, tools).drive(&mut run).await.unwrap();
    (outcome, run.messages().to_vec())
}

#[tokio::test]
async fn a_recorded_run_replays_to_the_same_conversation() {
    let path = temp_file("record");
    let scripted = ScriptedProvider::new("scripted")
        .call_tool("search", r#"{"q": "rust"}"#)
        .fail(ProviderErrorKind::Server, "boom")
        .reply_text("unused");
    let recorder = Recorder::new(scripted, &path).unwrap();
    let (original, original_messages) = run(Arc::new(recorder), "What is Rust?").await;
    assert_eq!(original.state, RunState::Error, "the recorded failure ends the run");

    let lines = std::fs::read_to_string(&path).unwrap();
    assert_eq!(lines.lines().count(), 2);
    assert!(lines.contains("\"error\""), "failures are recorded too");

    let replay = Replay::from_jsonl(&path).unwrap();
    let replay = Arc::new(replay);
    let (replayed, replayed_messages) = run(replay.clone(), "What is Rust?").await;
    assert_eq!(replayed, original);
    assert_eq!(replayed_messages, original_messages);
    assert_eq!(replay.remaining(), 0);
    let _ = std::fs::remove_file(path);
}

#[tokio::test]
async fn a_diverging_run_is_told_where() {
    let path = temp_file("diverge");
    let recorder =
        Recorder::new(ScriptedProvider::new("scripted").call_tool("search", "{}").reply_text("done"), &path)
            .unwrap();
    run(Arc::new(recorder), "one").await;
    // Same shape, but a tool result changes nothing here; a different history length does.
    let replay = Arc::new(Replay::from_jsonl(&path).unwrap());
    let tools = tools();
    let history = vec![Message::user("earlier"), Message::assistant("earlier answer")];
    let mut diverged = Run::builder(LoopConfig::default())
        .history(history)
        .user("one")
        .tools(tools.definitions())
        .build()
        .unwrap();
    let outcome = Driver::new(replay, tools).drive(&mut diverged).await.unwrap();
    let StopCause::ProviderFailed { message } = outcome.stop else { panic!("{:?}", outcome.stop) };
    assert!(message.contains("diverged from the recording at call 1"), "{message}");
    let _ = std::fs::remove_file(path);
}

#[test]
fn a_corrupt_recording_is_a_typed_error_with_its_line() {
    let path = temp_file("corrupt");
    std::fs::write(&path, "{\"request\": {}, \"response\": {\"ok\": {\"text\": \"x\", \"stop_reason\": \"end_turn\", \"model\": \"m\"}}}\nnot json\n").unwrap();
    let err = Replay::from_jsonl(&path).unwrap_err();
    assert!(err.to_string().contains("line 2"), "{err}");
    let _ = std::fs::remove_file(path);
}
