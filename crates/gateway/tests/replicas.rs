//! Two gateway replicas on one PostgreSQL store (issues 19, 36): a client whose requests
//! alternate between them stays one conversation, and the ladder ends its loop at the same step
//! as one gateway alone would; a replica stopped mid-conversation loses nothing; 50 concurrent
//! requests of one conversation, spread over both, leave a state that counts all 50.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use looprail_gateway::{Gateway, GatewayConfig};
use looprail_journal::{PostgresStore, SqliteStore};
use looprail_providers::fake::{FakeServer, Reply};
use serde_json::{Value, json};

async fn replica(store: looprail_journal::SharedStore, upstream: &str) -> String {
    let (url, stop, _) = stoppable(store, upstream).await;
    // Never stopped: the switch is kept for the test's whole runtime.
    std::mem::forget(stop);
    url
}

/// A replica and the switch that stops it (its connections cut, as a killed process's).
async fn stoppable(
    store: looprail_journal::SharedStore,
    upstream: &str,
) -> (String, tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let mut settings = GatewayConfig::new(Default::default(), Default::default());
    settings.upstream.openai = upstream.to_owned();
    settings.upstream.openai_key = Some("k".into());
    let gateway = Gateway::new(settings, store).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        looprail_gateway::serve(listener, gateway, async move {
            let _ = stopped.await;
        })
        .await;
    });
    (url, stop, task)
}

/// Drives a client that repeats the same search until it gets text, sending request `n` to
/// `urls[n % urls.len()]`; returns (steps, conversation ids seen).
async fn drive(urls: &[String]) -> (usize, Vec<String>) {
    drive_with(|step| urls[step % urls.len()].clone(), |_| {}).await
}

/// [`drive`] with the URL of each step chosen by `url`, and `before(step)` run before it.
async fn drive_with(url: impl Fn(usize) -> String, mut before: impl FnMut(usize)) -> (usize, Vec<String>) {
    let client = reqwest::Client::new();
    let tools =
        json!([{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]);
    let mut messages = vec![
        json!({"role": "system", "content": "You search."}),
        json!({"role": "user", "content": "Find it"}),
    ];
    let mut ids = Vec::new();
    for step in 0..40 {
        before(step);
        let response = common::post_json(
            &client,
            &url(step),
            &json!({"model": "m", "messages": messages, "tools": tools}),
        )
        .await;
        ids.push(response.headers()["x-looprail-run"].to_str().unwrap().to_owned());
        let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        let message = body["choices"][0]["message"].clone();
        messages.push(message.clone());
        let Some(calls) = message["tool_calls"].as_array() else { return (step + 1, ids) };
        messages.push(json!({"role": "tool", "tool_call_id": calls[0]["id"], "content": "no results"}));
    }
    panic!("the loop never ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_alternating_between_replicas_stay_one_conversation() {
    let Some(server) = looprail_testkit_postgres::server_or_skip("the gateway replica test") else { return };
    let upstream = FakeServer::responding(|body| {
        let message = if body["tools"].is_array() && body["tool_choice"] != "none" {
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]})
        } else {
            json!({"role": "assistant", "content": "Nothing found; where should I look?"})
        };
        Reply::json(200, &json!({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}).to_string())
    })
    .await;

    let path = common::TempStore::new("replicas");
    let alone = replica(SqliteStore::open(&path).await.unwrap().into(), &upstream.url).await;
    let (reference, _) = drive(&[alone]).await;

    let url = server.fresh_database().await;
    let a = replica(PostgresStore::connect(&url).await.unwrap().into(), &upstream.url).await;
    let b = replica(PostgresStore::connect(&url).await.unwrap().into(), &upstream.url).await;
    let (steps, ids) = drive(&[a, b]).await;
    assert!(ids.windows(2).all(|w| w[0] == w[1]), "one conversation across both replicas: {ids:?}");
    assert_eq!(steps, reference, "the ladder went on across replicas as on one gateway");
}

fn looping_upstream() -> impl Fn(&Value) -> Reply + Send + Sync + 'static {
    |body: &Value| {
        let message = if body["tools"].is_array() && body["tool_choice"] != "none" {
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]})
        } else {
            json!({"role": "assistant", "content": "Nothing found; where should I look?"})
        };
        Reply::json(
            200,
            &json!({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}})
            .to_string(),
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_stopped_mid_conversation_loses_nothing() {
    let Some(server) = looprail_testkit_postgres::server_or_skip("the gateway replica test") else { return };
    let upstream = FakeServer::responding(looping_upstream()).await;
    let path = common::TempStore::new("replica-alone");
    let alone = replica(SqliteStore::open(&path).await.unwrap().into(), &upstream.url).await;
    let (reference, _) = drive(&[alone]).await;

    let url = server.fresh_database().await;
    let (a, stop_a, task_a) =
        stoppable(PostgresStore::connect(&url).await.unwrap().into(), &upstream.url).await;
    let b = replica(PostgresStore::connect(&url).await.unwrap().into(), &upstream.url).await;
    // Alternating until step 4; then replica a is gone and b carries on alone.
    let mut stop_a = Some(stop_a);
    let (steps, ids) = drive_with(
        |step| if step < 4 && step % 2 == 0 { a.clone() } else { b.clone() },
        |step| {
            if step == 4
                && let Some(stop) = stop_a.take()
            {
                let _ = stop.send(());
            }
        },
    )
    .await;
    task_a.await.unwrap();
    assert!(ids.windows(2).all(|w| w[0] == w[1]), "one conversation: {ids:?}");
    assert_eq!(steps, reference, "the ladder went on from where it was, as on one gateway");
}

/// Fifty concurrent requests of conversation `run` over two replicas on one PostgreSQL, the
/// `n`th with `body(n)`; the conversation's state once all are answered.
async fn fifty_concurrent(run: &'static str, body: impl Fn(usize) -> Value) -> Option<Value> {
    let server = looprail_testkit_postgres::server_or_skip("the gateway replica test")?;
    let upstream = FakeServer::responding(looping_upstream()).await;
    let url = server.fresh_database().await;
    let store: looprail_journal::SharedStore = PostgresStore::connect(&url).await.unwrap().into();
    let urls = [
        replica(PostgresStore::connect(&url).await.unwrap().into(), &upstream.url).await,
        replica(PostgresStore::connect(&url).await.unwrap().into(), &upstream.url).await,
    ];
    let client = reqwest::Client::new();
    let mut requests = Vec::new();
    for n in 0..50 {
        let (client, body, url) = (client.clone(), body(n), urls[n % 2].clone());
        requests.push(tokio::spawn(async move {
            let response = client
                .post(url)
                .header("content-type", "application/json")
                .header("x-looprail-run", run)
                .body(body.to_string())
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
        }));
    }
    for request in requests {
        request.await.unwrap();
    }
    Some(store.load_journal(&format!("gateway/conversation/{run}")).await.unwrap().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_requests_with_different_histories_of_one_conversation_all_count() {
    // Each a branch of its own: the same start, then a question only this request asks.
    let body = |n: usize| {
        json!({"model": "m", "messages": [
            {"role": "user", "content": "Find it"},
            {"role": "assistant", "content": "Where should I look?"},
            {"role": "user", "content": format!("In folder {n}.")}]})
    };
    let Some(state) = fifty_concurrent("branching-conversation", body).await else { return };
    assert_eq!(state["requests"], 50, "every request counted, none lost to another: {state}");
    let usage = &state["counters"]["usage"];
    assert_eq!(
        (usage["input_tokens"].as_u64(), usage["output_tokens"].as_u64()),
        (Some(350), Some(150)),
        "{usage}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_requests_of_one_conversation_all_count() {
    let body = |_| json!({"model": "m", "messages": [{"role": "user", "content": "Find it"}]});
    let Some(state) = fifty_concurrent("shared-conversation", body).await else { return };
    assert_eq!(state["requests"], 50, "every request counted, none lost to another: {state}");
    let usage = &state["counters"]["usage"];
    assert_eq!((usage["input_tokens"].as_u64(), usage["output_tokens"].as_u64()), (Some(350), Some(150)));
}
