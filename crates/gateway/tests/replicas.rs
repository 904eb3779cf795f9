//! Two gateway replicas on one PostgreSQL store (issue 19): a client whose requests alternate
//! between them stays one conversation, and the ladder ends its loop at the same step as one
//! gateway alone would.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use looprail_gateway::{Gateway, GatewayConfig};
use looprail_journal::{PostgresStore, SqliteStore};
use looprail_providers::fake::{FakeServer, Reply};
use serde_json::{Value, json};

async fn replica(store: looprail_journal::SharedStore, upstream: &str) -> String {
    let mut settings = GatewayConfig::new(Default::default(), Default::default());
    settings.upstream.openai = upstream.to_owned();
    settings.upstream.openai_key = Some("k".into());
    let gateway = Gateway::new(settings, store).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
    tokio::spawn(looprail_gateway::serve(listener, gateway, std::future::pending()));
    url
}

/// Drives a client that repeats the same search until it gets text, sending request `n` to
/// `urls[n % urls.len()]`; returns (steps, conversation ids seen).
async fn drive(urls: &[String]) -> (usize, Vec<String>) {
    let client = reqwest::Client::new();
    let tools =
        json!([{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]);
    let mut messages = vec![
        json!({"role": "system", "content": "You search."}),
        json!({"role": "user", "content": "Find it"}),
    ];
    let mut ids = Vec::new();
    for step in 0..40 {
        let response = common::post_json(
            &client,
            &urls[step % urls.len()],
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
