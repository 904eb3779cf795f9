//! When a conversation's state is saved (`SaveOrder`): on a SQLite store, by default, after the
//! answer has gone out, with the conversation's next request waiting for that save before it
//! reads the state; before the answer when asked (as on PostgreSQL, which replicas share). The
//! store's write lock is held from outside to make a save wait, so what waits for it shows.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use looprail_gateway::{GatewayConfig, SaveOrder};
use looprail_journal::{RunStore, SqliteStore};
use looprail_providers::fake::{FakeServer, Reply};
use serde_json::{Value, json};

const RUN: &str = "ordered";

async fn upstream() -> FakeServer {
    FakeServer::responding(|_| {
        Reply::json(200, &json!({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}]}).to_string())
    })
    .await
}

fn settings(upstream: &str, save_order: SaveOrder) -> GatewayConfig {
    let mut settings = GatewayConfig::new(Default::default(), Default::default());
    settings.upstream.openai = upstream.to_owned();
    settings.upstream.openai_key = None;
    settings.save_order = save_order;
    settings
}

/// Request `n` of the conversation (its history grows by one exchange each time).
fn ask(url: &str, n: usize) -> tokio::task::JoinHandle<u16> {
    ask_as(url, RUN, n)
}

/// Request `n` of conversation `run`.
fn ask_as(url: &str, run: &'static str, n: usize) -> tokio::task::JoinHandle<u16> {
    let mut messages = Vec::new();
    for i in 0..n {
        messages.push(json!({"role": "user", "content": format!("question {i}")}));
        if i + 1 < n {
            messages.push(json!({"role": "assistant", "content": "hi"}));
        }
    }
    let endpoint = format!("{url}/v1/chat/completions");
    tokio::spawn(async move {
        let response = reqwest::Client::new()
            .post(endpoint)
            .header("x-looprail-run", run)
            .header("content-type", "application/json")
            .body(json!({"model": "m", "messages": messages}).to_string())
            .send()
            .await
            .unwrap();
        response.status().as_u16()
    })
}

/// The conversation's stored state, read through a second handle on the file.
async fn stored(path: &std::path::Path) -> Option<Value> {
    stored_as(path, RUN).await
}

/// Conversation `run`'s stored state.
async fn stored_as(path: &std::path::Path, run: &str) -> Option<Value> {
    let store = SqliteStore::open(path).await.unwrap();
    store.load_journal(&looprail_gateway::identity::state_key(run)).await.unwrap()
}

/// Holds the SQLite file's write lock (readers go on) until the returned sender is used.
async fn lock_writes(path: &std::path::Path) -> (std::sync::mpsc::Sender<()>, tokio::task::JoinHandle<()>) {
    let (release, released) = std::sync::mpsc::channel::<()>();
    let (held, holding) = tokio::sync::oneshot::channel();
    let path = path.to_path_buf();
    let holder = tokio::task::spawn_blocking(move || {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.busy_timeout(Duration::from_secs(10)).unwrap();
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        held.send(()).unwrap();
        let _ = released.recv_timeout(Duration::from_secs(20));
        conn.execute_batch("COMMIT").unwrap();
    });
    holding.await.unwrap();
    (release, holder)
}

/// A gateway on a SQLite store with its default save order (after the answer), its first
/// conversation's first request answered and saved: the store is in use.
async fn saving_after_answers(name: &str) -> (FakeServer, common::TempStore, common::sdk::Running) {
    let upstream = upstream().await;
    let path = common::TempStore::new(name);
    let gateway = common::sdk::serve_settings(&path, settings(&upstream.url, SaveOrder::Auto), 0).await;
    assert_eq!(ask(&gateway.url, 1).await.unwrap(), 200);
    while stored(&path).await.is_none() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (upstream, path, gateway)
}

/// The content of each line of a recording, in order.
fn contents(recording: &str) -> Vec<String> {
    recording
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["content"].as_str().unwrap().to_owned())
        .collect()
}

/// Whether `task` is still running after a moment (it waits for something).
async fn still_waiting(task: &tokio::task::JoinHandle<u16>) -> bool {
    tokio::time::sleep(Duration::from_millis(300)).await;
    !task.is_finished()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_the_answer_goes_out_first_and_the_next_request_waits_for_its_save() {
    let (_upstream, path, gateway) = saving_after_answers("after-answer").await;
    let (release, holder) = lock_writes(&path).await;
    // The store cannot be written, yet the answer comes: its save waits behind it.
    let second = tokio::time::timeout(Duration::from_secs(5), ask(&gateway.url, 2)).await;
    assert_eq!(second.expect("answered while the store was locked").unwrap(), 200);
    // The next request of the conversation waits for that save before it reads the state.
    let third = ask(&gateway.url, 3);
    assert!(still_waiting(&third).await, "it read the state before the save before it was done");
    release.send(()).unwrap();
    holder.await.unwrap();
    assert_eq!(third.await.unwrap(), 200);
    // Stopping waits for the saves still running: every request is counted.
    gateway.stop().await;
    assert_eq!(stored(&path).await.unwrap()["requests"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saves_queued_behind_a_locked_store_are_written_together_and_none_is_lost() {
    const RUNS: [&str; 12] = ["g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7", "g8", "g9", "g10", "g11"];
    let (_upstream, path, gateway) = saving_after_answers("grouped").await;
    let (release, holder) = lock_writes(&path).await;
    // Twelve conversations answered while nothing can be written: their saves queue (the
    // first waits for the lock, the others for it) and go in the next transactions.
    for (i, run) in RUNS.iter().enumerate() {
        let answered =
            tokio::time::timeout(Duration::from_secs(5), ask_as(&gateway.url, run, 1 + i % 2)).await;
        assert_eq!(answered.expect("answered while the store was locked").unwrap(), 200);
    }
    release.send(()).unwrap();
    holder.await.unwrap();
    gateway.stop().await;
    for (i, run) in RUNS.iter().enumerate() {
        let state = stored_as(&path, run).await.unwrap_or_else(|| panic!("{run} was not saved"));
        assert_eq!(state["requests"], 1, "{run}");
        assert_eq!(state["seen"], json!(1 + 2 * (i % 2)), "{run}: the messages its request held");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saved_before_the_answer_when_asked() {
    let upstream = upstream().await;
    let path = common::TempStore::new("before-answer");
    let gateway =
        common::sdk::serve_settings(&path, settings(&upstream.url, SaveOrder::BeforeAnswer), 0).await;
    assert_eq!(ask(&gateway.url, 1).await.unwrap(), 200);
    assert!(stored(&path).await.is_some(), "saved before the client had the answer");
    let (release, holder) = lock_writes(&path).await;
    let second = ask(&gateway.url, 2);
    assert!(still_waiting(&second).await, "answered before its state was saved");
    release.send(()).unwrap();
    holder.await.unwrap();
    assert_eq!(second.await.unwrap(), 200);
    gateway.stop().await;
    assert_eq!(stored(&path).await.unwrap()["requests"], 2);
}

/// An upstream that calls `search` again until asked for the final answer.
async fn looping_upstream() -> FakeServer {
    FakeServer::responding(|body| {
        let message = if body["tool_choice"] == "none" {
            json!({"role": "assistant", "content": "final"})
        } else {
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "search", "arguments": "{\"q\":\"report\"}"}}]})
        };
        let finish = if message["tool_calls"].is_null() { "stop" } else { "tool_calls" };
        Reply::json(
            200,
            &json!({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "finish_reason": finish, "message": message}]})
            .to_string(),
        )
    })
    .await
}

/// What the upstream was sent for each request of one looping conversation, unnamed (known by
/// its fingerprints), sent back to back: `n` (plain), `g` (with the guards' instruction) or `f`
/// (the final answer asked for). `preamble` bytes of system prompt come first (a long one makes
/// the gateway read each request from the layout of the one before).
async fn ladder(save_order: SaveOrder, preamble: usize) -> String {
    let upstream = looping_upstream().await;
    let path = common::TempStore::new("ladder");
    let gateway = common::sdk::serve_settings(&path, settings(&upstream.url, save_order), 0).await;
    let client = reqwest::Client::new();
    let tools =
        json!([{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]);
    let mut messages = vec![json!({"role": "user", "content": "Find the report"})];
    if preamble > 0 {
        messages.insert(0, json!({"role": "system", "content": "Be thorough. ".repeat(preamble / 13)}));
    }
    for i in 0..40 {
        let body = json!({"model": "m", "messages": messages, "tools": tools});
        let response = client
            .post(format!("{}/v1/chat/completions", gateway.url))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let answer: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        let message = answer["choices"][0]["message"].clone();
        let Some(call) = message["tool_calls"][0].as_object().cloned() else { break };
        messages.push(message);
        messages.push(
            json!({"role": "tool", "tool_call_id": call["id"], "content": format!("no results ({i})")}),
        );
    }
    gateway.stop().await;
    upstream
        .requests()
        .iter()
        .map(|r| match (r.body["tool_choice"] == "none", r.body.to_string().contains("[looprail]")) {
            (true, _) => 'f',
            (false, true) => 'g',
            (false, false) => 'n',
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guards_judge_each_step_alike_whenever_the_state_is_saved() {
    let after = ladder(SaveOrder::AfterAnswer, 0).await;
    let before = ladder(SaveOrder::BeforeAnswer, 0).await;
    assert!(after.contains('g') && after.ends_with('f'), "the ladder spoke, then concluded: {after}");
    assert_eq!(after, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_of_long_requests_is_judged_as_one_of_short_ones() {
    let short = ladder(SaveOrder::AfterAnswer, 0).await;
    let long = ladder(SaveOrder::AfterAnswer, 40_000).await;
    assert_eq!(long, short, "each long request known from the one before it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_request_does_not_wait_for_the_recording_which_stays_in_order() {
    // The conversation's recording is a FIFO: opening it blocks the recorder until a reader
    // comes, as slow as a filesystem gets. The state is stored meanwhile, and the
    // conversation's next requests go on; the recording's lines follow, in order.
    let upstream = upstream().await;
    let path = common::TempStore::new("recording-behind");
    let records = tempfile::tempdir().unwrap();
    let fifo = records.path().join(format!("{RUN}.jsonl"));
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let mut config = settings(&upstream.url, SaveOrder::Auto);
    config.record_dir = Some(records.path().to_path_buf());
    let gateway = common::sdk::serve_settings(&path, config, 0).await;
    for n in 1..=3 {
        let answered = tokio::time::timeout(Duration::from_secs(10), ask(&gateway.url, n)).await;
        assert_eq!(answered.unwrap_or_else(|_| panic!("request {n} waited")).unwrap(), 200);
    }
    assert_eq!(stored(&path).await.unwrap()["requests"], 3, "every state stored");
    // A reader lets the recorder on; once the gateway stops, the writer closes the FIFO.
    let reader = tokio::task::spawn_blocking(move || std::fs::read_to_string(&fifo).unwrap());
    gateway.stop().await;
    let recording = tokio::time::timeout(Duration::from_secs(10), reader).await.unwrap().unwrap();
    let said = contents(&recording);
    assert_eq!(said, ["question 0", "hi", "question 1", "hi", "question 2", "hi"], "{recording}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_that_failed_is_taken_up_again_with_the_next_answer() {
    // The recordings' directory cannot be made at first (a file stands in its place): the
    // first answer's lines are lost and logged; once it can, the next answer records from
    // where the recording failed, as far as its request still carries (the first reply).
    let upstream = upstream().await;
    let path = common::TempStore::new("recording-failed");
    let root = tempfile::tempdir().unwrap();
    let records = root.path().join("records");
    std::fs::write(&records, "in the way").unwrap();
    let mut config = settings(&upstream.url, SaveOrder::Auto);
    config.record_dir = Some(records.clone());
    let gateway = common::sdk::serve_settings(&path, config, 0).await;
    assert_eq!(ask(&gateway.url, 1).await.unwrap(), 200);
    while stored(&path).await.is_none() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The failed append is told by the recorder's thread (at once: the open fails): the
    // moment given it is generous for a loaded machine.
    tokio::time::sleep(Duration::from_secs(1)).await;
    std::fs::remove_file(&records).unwrap();
    assert_eq!(ask(&gateway.url, 2).await.unwrap(), 200);
    gateway.stop().await;
    let recording = std::fs::read_to_string(records.join(format!("{RUN}.jsonl"))).unwrap();
    let said = contents(&recording);
    assert_eq!(said, ["hi", "question 1", "hi"], "{recording}");
}
