//! Runs driven through the runner on each backend: to their end, crashed inside a side effect
//! and taken over by another worker, paused for a question answered elsewhere, and taken over
//! after they had in fact finished.

use std::sync::Arc;
use std::time::Duration;

use looprail_journal::{
    Resolution, Resumed, RunSpec, RunStatus, Runner, SharedStore, Started, Waiting, now_ms,
};
use looprail_loop_core::prelude::*;

use crate::common::{ByTurn, EffectTool, Effects, calls};
use crate::conformance::Backend;

fn script() -> Vec<ModelResponse> {
    vec![calls("s1", "send"), ModelResponse::text("by-turn", "Sent.")]
}

fn runner(store: &SharedStore, effects: &Effects, hang: bool) -> (Runner, Arc<tokio::sync::Notify>) {
    let mut send = EffectTool::new("send", false, effects.clone());
    if hang {
        send.hang_on = Some("s1".into());
    }
    let hanging = Arc::clone(&send.hanging);
    let runner = Runner::new(
        Arc::clone(store),
        Arc::new(ByTurn::new(script())),
        ToolSet::new().with(send),
        "You send.",
    );
    (runner, hanging)
}

fn spec() -> RunSpec {
    RunSpec::new("r", "c", "Send it").with_recipe(serde_json::json!({}))
}

pub async fn a_run_is_driven_to_its_end_through_the_envelope(backend: Backend) {
    let (store, effects) = (backend.open().await, Effects::default());
    let Started::Ran(outcome) = runner(&store, &effects, false).0.start(&spec()).await.unwrap() else {
        panic!("the lane is free")
    };
    assert_eq!((outcome.state, outcome.final_text.as_str()), (RunState::Completed, "Sent."));
    assert_eq!(effects.count("s1"), 1);
    assert!(store.tool_call("r", "lr-0").await.unwrap().unwrap().completed.is_some());
    assert_eq!(store.run("r").await.unwrap().unwrap().status, RunStatus::Completed);
    assert_eq!(store.final_outcome("r").await.unwrap().unwrap().final_text, "Sent.");
}

pub async fn a_crash_inside_a_side_effect_is_taken_over_and_halts_for_a_human(backend: Backend) {
    let effects = Effects::default();
    let first = backend.open_as("w1").await;
    let (doomed, hanging) = runner(&first, &effects, true);
    let task = tokio::spawn(async move { doomed.start(&spec()).await });
    tokio::time::timeout(Duration::from_secs(20), hanging.notified()).await.expect("the send starts");
    task.abort(); // the worker dies inside the send
    let _ = task.await;
    // ...and its heartbeats stop: a take-over treats every heartbeat up to a minute from now as
    // stale (a heartbeat already in flight when the task died may still land).

    let second = backend.open_as("w2").await;
    assert_eq!(second.take_over(now_ms() + 60_000, 5).await.unwrap().as_deref(), Some("r"));
    let (taker, _) = runner(&second, &effects, false);
    let halted = taker.execute_taken_over("r").await.unwrap();
    assert_eq!(halted.state, RunState::WaitingOnHuman, "an interrupted send is never re-run blindly");
    assert_eq!(effects.count("s1"), 1);
    assert!(matches!(taker.waiting_for("r").await.unwrap(), Waiting::UnsafeCall { .. }));
    let Resumed::Ran(outcome) = taker.resolve("r", "lr-0", Resolution::Done("sent".into())).await.unwrap()
    else {
        panic!("the run goes on")
    };
    assert_eq!((outcome.state, outcome.final_text.as_str()), (RunState::Completed, "Sent."));
    assert_eq!(effects.count("s1"), 1, "the send ran once across crash, take-over and resolution");
}

fn ask() -> ModelResponse {
    let args = serde_json::json!({ "question": "Which quarter?" }).to_string();
    ModelResponse::tool_calls("by-turn", vec![ToolCall::new("q1", "ask_human", args)])
}

pub async fn a_question_is_answered_from_another_process(backend: Backend) {
    let script = vec![ask(), ModelResponse::text("by-turn", "Here is the Q3 report.")];
    let make = |store: SharedStore| {
        Runner::new(store, Arc::new(ByTurn::new(script.clone())), ToolSet::new(), "You report.")
    };
    let store = backend.open_as("w1").await;
    let Started::Ran(paused) = make(store.clone()).start(&RunSpec::new("r", "c", "Report")).await.unwrap()
    else {
        panic!("the lane is free")
    };
    assert_eq!(paused.state, RunState::WaitingOnHuman);
    store.close().await;

    let later = make(backend.open_as("w2").await);
    assert_eq!(
        later.waiting_for("r").await.unwrap(),
        Waiting::Question { question: "Which quarter?".into() }
    );
    let outcome = later.answer("r", "Q3, please").await.unwrap();
    assert_eq!((outcome.state, outcome.final_text.as_str()), (RunState::Completed, "Here is the Q3 report."));
    let row = later.store().run("r").await.unwrap().unwrap();
    assert_eq!((row.status, row.worker.as_deref()), (RunStatus::Completed, Some("w2")));
}

pub async fn a_finished_run_taken_over_is_closed_not_rerun(backend: Backend) {
    let (store, effects) = (backend.open().await, Effects::default());
    let (first, _) = runner(&store, &effects, false);
    first.start(&spec()).await.unwrap();
    // The worker died after its final checkpoint, before it recorded the status.
    store.set_status("r", RunStatus::Running).await.unwrap();
    let other = backend.open_as("w2").await;
    assert_eq!(other.take_over(now_ms() + 60_000, 5).await.unwrap().as_deref(), Some("r"));
    let outcome = runner(&other, &effects, false).0.execute_taken_over("r").await.unwrap();
    assert_eq!(outcome.final_text, "Sent.");
    assert_eq!(effects.count("s1"), 1, "nothing ran again");
    assert_eq!(other.run("r").await.unwrap().unwrap().status, RunStatus::Completed);
}
