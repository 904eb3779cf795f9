//! Crash and resume from the same SQLite file (issue 8, B7): killed at every model call and in
//! the middle of every tool call, a run resumes to the conversation the uninterrupted run had,
//! and a side effect never happens twice.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{ByTurn, EffectTool, Effects, calls, temp_db};
use looprail_journal::RunStore as _;
use looprail_journal::{
    JournalError, Resolution, ResumeHalt, Resumed, RunSpec, RunStatus, Runner, SqliteStore, Started, Waiting,
};
use looprail_loop_core::prelude::*;
use proptest::prelude::*;

const SYSTEM: &str = "You are a careful agent.";

/// read (idempotent), send (side effect), read, send, then the answer.
fn script() -> Vec<ModelResponse> {
    vec![
        calls("r1", "read"),
        calls("s1", "send"),
        calls("r2", "read"),
        calls("s2", "send"),
        ModelResponse::text("by-turn", "finished"),
    ]
}

struct World {
    provider: ByTurn,
    read: EffectTool,
    send: EffectTool,
}

fn world(effects: &Effects, script: Vec<ModelResponse>) -> World {
    World {
        provider: ByTurn::new(script),
        read: EffectTool::new("read", true, effects.clone()),
        send: EffectTool::new("send", false, effects.clone()),
    }
}

fn runner(store: &SqliteStore, world: World) -> Runner {
    let tools = ToolSet::new().with(world.read).with(world.send);
    Runner::new(store.clone(), Arc::new(world.provider), tools, SYSTEM)
        .with_heartbeat(Duration::from_millis(20))
}

async fn reference() -> Vec<Message> {
    let path = temp_db("reference");
    let store = SqliteStore::open(&path).await.unwrap();
    let effects = Effects::default();
    let runner = runner(&store, world(&effects, script()));
    let Started::Ran(outcome) = runner.start(&RunSpec::new("ref", "c", "do it")).await.unwrap() else {
        panic!()
    };
    assert_eq!(outcome.final_text, "finished");
    let messages = final_messages(&store).await;
    let _ = std::fs::remove_file(path);
    messages
}

async fn final_messages(store: &SqliteStore) -> Vec<Message> {
    let runs = store.runs().await.unwrap();
    store.latest_checkpoint(&runs.last().unwrap().run_id).await.unwrap().unwrap().messages
}

/// Runs until `crash` fires, then drops the whole runner, as a killed process would.
async fn run_until_crash(path: &std::path::Path, effects: &Effects, crash: Crash) {
    run_script_until_crash(path, effects, crash, script()).await;
}

/// [`run_until_crash`] with another script.
async fn run_script_until_crash(
    path: &std::path::Path,
    effects: &Effects,
    crash: Crash,
    script: Vec<ModelResponse>,
) {
    let store = SqliteStore::open(path).await.unwrap();
    let mut w = world(effects, script);
    let signal = match &crash {
        Crash::AtModelCall(turn) => {
            w.provider.block_at = Some(*turn);
            w.provider.blocked.clone()
        }
        Crash::InTool(call_id) => {
            let tool = if call_id.starts_with('s') { &mut w.send } else { &mut w.read };
            tool.hang_on = Some(call_id.clone());
            tool.hanging.clone()
        }
    };
    let runner = runner(&store, w);
    let mut task = tokio::spawn(async move { runner.start(&RunSpec::new("run", "c", "do it")).await });
    tokio::select! {
        () = signal.notified() => {
            task.abort();
            let _ = (&mut task).await;
        }
        _ = &mut task => {} // it paused for a human before reaching the crash point
    }
    common::age_heartbeats(&store).await;
    store.close().await;
}

#[derive(Debug, Clone)]
enum Crash {
    AtModelCall(usize),
    InTool(String),
}

/// Resumes until the run is over, resolving resume-unsafe halts as a human would (saying the
/// call did go through). Returns the number of human interventions.
async fn resume_to_end(path: &std::path::Path, effects: &Effects) -> (usize, Outcome) {
    let store = SqliteStore::open(path).await.unwrap();
    let mut interventions = 0;
    // The crashed run's heartbeat is old news to this process.
    sqlx::query("UPDATE runs SET heartbeat_at = 0").execute(store.pool()).await.unwrap();
    let mut verdict: Option<(String, String)> = None;
    loop {
        let runner = runner(&store, world(effects, script()));
        let resumed = match verdict.take() {
            None => runner.resume("run").await.unwrap(),
            Some((call_id, tool)) => {
                runner.resolve("run", &call_id, Resolution::Done(format!("{tool} done"))).await.unwrap()
            }
        };
        match resumed {
            Resumed::Ran(outcome) if outcome.state == RunState::WaitingOnHuman => {
                let StopCause::ResumeUnsafe { call_id, tool } = &outcome.stop else {
                    panic!("{:?}", outcome.stop)
                };
                assert_eq!(store.run("run").await.unwrap().unwrap().status, RunStatus::WaitingOnHuman);
                let refused = runner.resume("run").await.unwrap_err();
                assert!(matches!(refused, JournalError::WaitsOnHuman { .. }), "{refused}");
                verdict = Some((call_id.clone(), tool.clone()));
                interventions += 1;
            }
            Resumed::Ran(outcome) => return (interventions, outcome),
            Resumed::Halted(halt) => panic!("unexpected halt {halt:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_at_every_model_call_and_inside_every_tool_call_it_resumes_to_the_same_end() {
    let expected = reference().await;
    let mut crashes: Vec<Crash> = (0..5).map(Crash::AtModelCall).collect();
    crashes.extend(["r1", "s1", "r2", "s2"].iter().map(|c| Crash::InTool((*c).to_owned())));
    for crash in crashes {
        let path = temp_db("crash");
        let effects = Effects::default();
        tokio::time::timeout(Duration::from_secs(30), run_until_crash(&path, &effects, crash.clone()))
            .await
            .expect("crash phase hung");
        let (interventions, outcome) =
            tokio::time::timeout(Duration::from_secs(30), resume_to_end(&path, &effects))
                .await
                .expect("resume hung");
        assert_eq!(outcome.final_text, "finished", "{crash:?}");
        for send in ["s1", "s2"] {
            assert_eq!(effects.count(send), 1, "{crash:?}: `{send}` must happen exactly once");
        }
        for read in ["r1", "r2"] {
            assert!(effects.count(read) >= 1, "{crash:?}: `{read}` must happen");
        }
        let expect_human = matches!(&crash, Crash::InTool(c) if c.starts_with('s'));
        assert_eq!(interventions, usize::from(expect_human), "{crash:?}");
        let store = SqliteStore::open(&path).await.unwrap();
        assert_eq!(final_messages(&store).await, expected, "{crash:?}: no message lost or duplicated");
        assert_eq!(store.run("run").await.unwrap().unwrap().status, RunStatus::Completed);
        let _ = std::fs::remove_file(path);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_system_prompt_halts_the_resume_for_a_human() {
    let path = temp_db("prompt");
    let effects = Effects::default();
    run_until_crash(&path, &effects, Crash::AtModelCall(2)).await;
    let store = SqliteStore::open(&path).await.unwrap();
    common::age_heartbeats(&store).await;
    let w = world(&effects, script());
    let tools = ToolSet::new().with(w.read).with(w.send);
    let edited = Runner::new(store.clone(), Arc::new(w.provider), tools, "You are a reckless agent.");
    let Resumed::Halted(halt) = edited.resume("run").await.unwrap() else { panic!("must halt") };
    assert_eq!(halt, ResumeHalt::SystemPromptChanged);
    assert_eq!(store.run("run").await.unwrap().unwrap().status, RunStatus::WaitingOnHuman);
    let _ = std::fs::remove_file(path);
}

fn step() -> impl Strategy<Value = (bool, u8)> {
    (any::<bool>(), 0u8..3)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random scripts of reads and sends, a random crash point, resume until done: a send's
    /// effect happens at most once, a read's at least once, the run ends completed, and the
    /// conversation is the uninterrupted one.
    #[test]
    fn side_effects_happen_at_most_once_across_crash_and_resume(steps in prop::collection::vec(step(), 1..6), crash_at in 0usize..12) {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(async move {
            let mut script: Vec<ModelResponse> = steps
                .iter()
                .enumerate()
                .map(|(i, (is_send, _))| if *is_send { calls(&format!("s{i}"), "send") } else { calls(&format!("r{i}"), "read") })
                .collect();
            script.push(ModelResponse::text("by-turn", "finished"));
            let n = steps.len();
            // Crash points: model calls 0..=n, then tool calls.
            let crash = if crash_at <= n {
                Crash::AtModelCall(crash_at)
            } else {
                let i = (crash_at - n - 1) % n;
                Crash::InTool(if steps[i].0 { format!("s{i}") } else { format!("r{i}") })
            };
            let reference_path = temp_db("pref");
            let reference_store = SqliteStore::open(&reference_path).await.unwrap();
            let reference_effects = Effects::default();
            let w = world(&reference_effects, script.clone());
            let r = Runner::new(reference_store.clone(), Arc::new(w.provider), ToolSet::new().with(w.read).with(w.send), SYSTEM);
            r.start(&RunSpec::new("run", "c", "do it")).await.unwrap();
            let expected = final_messages(&reference_store).await;

            let path = temp_db("prop");
            let effects = Effects::default();
            run_script_until_crash(&path, &effects, crash, script.clone()).await;
            let store = SqliteStore::open(&path).await.unwrap();
            common::age_heartbeats(&store).await;
            let mut verdict: Option<(String, String)> = None;
            let final_outcome = loop {
                let w = world(&effects, script.clone());
                let runner = Runner::new(store.clone(), Arc::new(w.provider), ToolSet::new().with(w.read).with(w.send), SYSTEM);
                let resumed = match verdict.take() {
                    None => runner.resume("run").await.unwrap(),
                    Some((call_id, tool)) => runner.resolve("run", &call_id, Resolution::Done(format!("{tool} done"))).await.unwrap(),
                };
                match resumed {
                    Resumed::Ran(o) if o.state == RunState::WaitingOnHuman => {
                        let StopCause::ResumeUnsafe { call_id, tool } = &o.stop else { panic!("{:?}", o.stop) };
                        verdict = Some((call_id.clone(), tool.clone()));
                    }
                    Resumed::Ran(o) => break o,
                    Resumed::Halted(h) => panic!("{h:?}"),
                }
            };
            assert_eq!(final_outcome.state, RunState::Completed);
            for (i, (is_send, _)) in steps.iter().enumerate() {
                if *is_send {
                    assert_eq!(effects.count(&format!("s{i}")), 1, "send s{i} ran {} times", effects.count(&format!("s{i}")));
                } else {
                    assert!(effects.count(&format!("r{i}")) >= 1);
                }
            }
            assert_eq!(final_messages(&store).await, expected);
            let _ = std::fs::remove_file(path);
            let _ = std::fs::remove_file(reference_path);
        });
    }
}

/// A server that sends `call_0` for every call (and once nothing at all) must not make the
/// envelope replay an earlier call's result, live or across a crash (issue 14).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reused_and_empty_provider_ids_never_skip_a_call_across_crash_and_resume() {
    let reusing = || {
        vec![
            ModelResponse::tool_calls("by-turn", vec![ToolCall::new("call_0", "read", r#"{"tag": "r1"}"#)]),
            ModelResponse::tool_calls(
                "by-turn",
                vec![
                    ToolCall::new("call_0", "send", r#"{"tag": "s1"}"#),
                    ToolCall::new("call_0", "read", r#"{"tag": "r2"}"#),
                ],
            ),
            ModelResponse::tool_calls("by-turn", vec![ToolCall::new("", "send", r#"{"tag": "s2"}"#)]),
            ModelResponse::text("by-turn", "finished"),
        ]
    };
    // Live: every call runs once and gets its own result.
    let path = temp_db("reused-live");
    let store = SqliteStore::open(&path).await.unwrap();
    let effects = Effects::default();
    let live = runner(&store, world(&effects, reusing()));
    let Started::Ran(outcome) = live.start(&RunSpec::new("live", "c", "do it")).await.unwrap() else {
        panic!()
    };
    assert_eq!(outcome.final_text, "finished");
    for tag in ["r1", "s1", "r2", "s2"] {
        assert_eq!(effects.count(tag), 1, "{tag} ran exactly once");
    }
    let messages = final_messages(&store).await;
    let ids: Vec<String> = messages.iter().flat_map(Message::tool_calls).map(|c| c.id.clone()).collect();
    assert_eq!(ids, ["lr-0", "lr-1", "lr-2", "lr-3"]);
    let wire: Vec<Option<String>> =
        messages.iter().flat_map(Message::tool_calls).map(|c| c.wire_id.clone()).collect();
    assert_eq!(wire[0].as_deref(), Some("call_0"), "the provider's id is kept for the wire");
    let _ = std::fs::remove_file(path);

    // Crash in the middle of the second `call_0` send, then resume: the first `call_0`'s
    // completed result is not taken for it, and the send is not repeated.
    let path = temp_db("reused-crash");
    let effects = Effects::default();
    run_script_until_crash(&path, &effects, Crash::InTool("s1".into()), reusing()).await;
    let store = SqliteStore::open(&path).await.unwrap();
    common::age_heartbeats(&store).await;
    let first = runner(&store, world(&effects, reusing()));
    let Resumed::Ran(halted) = first.resume("run").await.unwrap() else { panic!("must run") };
    let StopCause::ResumeUnsafe { call_id, .. } = &halted.stop else { panic!("{:?}", halted.stop) };
    assert_eq!(call_id, "lr-1", "the unfinished send is named by its own id");
    let second = runner(&store, world(&effects, reusing()));
    let Resumed::Ran(outcome) =
        second.resolve("run", call_id, Resolution::Done("send done".into())).await.unwrap()
    else {
        panic!("must run")
    };
    assert_eq!(outcome.final_text, "finished");
    assert_eq!(effects.count("s1"), 1, "the send was never repeated");
    assert_eq!(effects.count("s2"), 1, "the later send with an empty id ran");
    assert!(effects.count("r2") >= 1, "the read after the clash ran instead of being replayed");
    let _ = std::fs::remove_file(path);
}

/// Crashes inside the first send and resumes into the resume-unsafe halt; returns the call id.
async fn halted_in_first_send(path: &std::path::Path, effects: &Effects) -> (SqliteStore, String) {
    run_until_crash(path, effects, Crash::InTool("s1".into())).await;
    let store = SqliteStore::open(path).await.unwrap();
    common::age_heartbeats(&store).await;
    let Resumed::Ran(halted) = runner(&store, world(effects, script())).resume("run").await.unwrap() else {
        panic!("must run")
    };
    let StopCause::ResumeUnsafe { call_id, .. } = halted.stop else { panic!("{:?}", halted.stop) };
    (store, call_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_human_resolves_an_unsafe_call_by_retry_or_skip_and_the_run_finishes() {
    // Retry: the send runs again (the human says the first attempt did not go through).
    let (path, effects) = (temp_db("retry"), Effects::default());
    let (store, call_id) = halted_in_first_send(&path, &effects).await;
    let human = runner(&store, world(&effects, script()));
    let wrong = human.resolve("run", "lr-99", Resolution::Retry).await.unwrap_err();
    assert!(matches!(wrong, JournalError::NotWaiting { .. }), "{wrong}");
    let Resumed::Ran(outcome) = human.resolve("run", &call_id, Resolution::Retry).await.unwrap() else {
        panic!("must run")
    };
    assert_eq!(outcome.final_text, "finished");
    assert_eq!(effects.count("s1"), 2, "the retried send ran once more");
    assert_eq!(effects.count("s2"), 1);
    let _ = std::fs::remove_file(path);

    // Skip: the send is not run again and the model is told so.
    let (path, effects) = (temp_db("skip"), Effects::default());
    let (store, call_id) = halted_in_first_send(&path, &effects).await;
    let human = runner(&store, world(&effects, script()));
    let Resumed::Ran(outcome) = human.resolve("run", &call_id, Resolution::Skip).await.unwrap() else {
        panic!("must run")
    };
    assert_eq!(outcome.final_text, "finished");
    assert_eq!(effects.count("s1"), 1, "a skipped send is never run again");
    let messages = final_messages(&store).await;
    assert!(
        messages
            .iter()
            .flat_map(Message::tool_results)
            .any(|r| r.content == looprail_journal::SKIPPED && r.is_error),
        "the model saw that the call was skipped"
    );
    let _ = std::fs::remove_file(path);
}

/// What a human does when the run waits: 0 says done, 1 retry, 2 skip, 3 cancel.
fn human() -> impl Strategy<Value = u8> {
    0u8..4
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random scripts of reads, sends and questions, a random crash point, and random human
    /// answers, verdicts and cancels: a send happens at most once, plus once per retry a
    /// human asked for; the run always ends completed or cancelled; nothing is left running.
    #[test]
    fn human_actions_never_repeat_a_side_effect_nor_lose_a_run(
        steps in prop::collection::vec(0u8..3, 1..6),
        crash_at in 0usize..12,
        actions in prop::collection::vec(human(), 8),
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(async move {
            let names = |i: usize, kind: u8| match kind { 0 => (format!("r{i}"), "read"), 1 => (format!("s{i}"), "send"), _ => (format!("q{i}"), "ask_human") };
            let mut script: Vec<ModelResponse> = steps.iter().enumerate().map(|(i, k)| { let (id, name) = names(i, *k); calls(&id, name) }).collect();
            script.push(ModelResponse::text("by-turn", "finished"));
            let n = steps.len();
            let crash = if crash_at <= n { Crash::AtModelCall(crash_at) } else {
                let i = (crash_at - n - 1) % n;
                let (id, _) = names(i, steps[i]);
                if steps[i] == 2 { Crash::AtModelCall(i) } else { Crash::InTool(id) }
            };
            let path = temp_db("prop-human");
            let effects = Effects::default();
            run_script_until_crash(&path, &effects, crash, script.clone()).await;
            let store = SqliteStore::open(&path).await.unwrap();
            common::age_heartbeats(&store).await;
            let mut retries: std::collections::HashMap<String, u32> = Default::default();
            let mut actions = actions.into_iter().cycle();
            for _ in 0..40 {
                let w = world(&effects, script.clone());
                let runner = Runner::new(store.clone(), Arc::new(w.provider), ToolSet::new().with(w.read).with(w.send), SYSTEM);
                let status = store.run("run").await.unwrap().expect("the run is never lost").status;
                match status {
                    RunStatus::Completed | RunStatus::Cancelled => break,
                    RunStatus::WaitingOnHuman => {
                        let action = actions.next().unwrap();
                        if action == 3 {
                            store.request_cancel("run", looprail_journal::now_ms()).await.unwrap();
                            store.set_status("run", RunStatus::Cancelled).await.unwrap();
                            continue;
                        }
                        match runner.waiting_for("run").await.unwrap() {
                            Waiting::Question { .. } => { runner.answer("run", "go on").await.unwrap(); }
                            Waiting::UnsafeCall { call_id, tool } => {
                                let resolution = match action {
                                    0 => Resolution::Done(format!("{tool} done")),
                                    1 => {
                                        let tool_name = store.tool_call("run", &call_id).await.unwrap().map(|r| r.tool).unwrap_or_default();
                                        *retries.entry(format!("{tool_name}:{call_id}")).or_default() += 1;
                                        Resolution::Retry
                                    }
                                    _ => Resolution::Skip,
                                };
                                runner.resolve("run", &call_id, resolution).await.unwrap();
                            }
                            Waiting::SystemPromptChanged => panic!("the prompt never changes here"),
                        }
                    }
                    _ => { runner.resume("run").await.unwrap(); }
                }
            }
            let status = store.run("run").await.unwrap().unwrap().status;
            assert!(matches!(status, RunStatus::Completed | RunStatus::Cancelled), "ended {status}");
            let allowed_extra: u32 = retries.values().sum();
            for (i, kind) in steps.iter().enumerate() {
                if *kind == 1 {
                    let count = effects.count(&format!("s{i}"));
                    assert!(count <= 1 + allowed_extra, "send s{i} ran {count} times with {allowed_extra} retries asked");
                }
            }
            let report = store.reconcile(looprail_journal::now_ms() + 3_600_000, Duration::from_secs(60), Duration::from_secs(180)).await.unwrap();
            assert_eq!(report.timed_out, 0, "nothing was left running");
            let _ = std::fs::remove_file(path);
        });
    }
}
