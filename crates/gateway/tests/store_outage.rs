//! PostgreSQL stopped in the middle of a conversation (issue 36): the gateway refuses the
//! request with a 503 in the API's format and forwards nothing, and once the server is back the
//! conversation goes on from its saved state. (A test binary of its own: it stops the shared
//! test server.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use looprail_gateway::{Gateway, GatewayConfig};
use looprail_journal::PostgresStore;
use looprail_providers::fake::{FakeServer, Reply};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgresql_stopped_mid_conversation_fails_closed_then_the_conversation_goes_on() {
    let Some(server) = looprail_testkit_postgres::server_or_skip("the store outage test") else { return };
    let upstream = FakeServer::responding(|_| {
        Reply::json(
            200,
            &json!({"id": "m", "type": "message", "role": "assistant", "model": "c",
            "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 1, "output_tokens": 1}})
            .to_string(),
        )
    })
    .await;
    let database = server.fresh_database().await;
    let store: looprail_journal::SharedStore = PostgresStore::connect(&database).await.unwrap().into();
    let mut settings = GatewayConfig::default();
    settings.upstream.anthropic = upstream.url.clone();
    settings.upstream.anthropic_key = Some("k".into());
    let gateway = Gateway::new(settings, store.clone()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/messages", listener.local_addr().unwrap());
    tokio::spawn(looprail_gateway::serve(listener, gateway, std::future::pending()));
    let client = reqwest::Client::new();
    let send = |text: &'static str| {
        let (client, url) = (client.clone(), url.clone());
        async move {
            let body =
                json!({"model": "c", "max_tokens": 10, "messages": [{"role": "user", "content": text}]});
            client
                .post(url)
                .header("content-type", "application/json")
                .header("x-looprail-run", "outage")
                .body(body.to_string())
                .send()
                .await
                .unwrap()
        }
    };
    assert_eq!(send("before").await.status(), 200);

    // The server goes down for a while; a request meanwhile is refused, nothing forwarded.
    let restart = tokio::task::spawn_blocking(move || server.restart(Duration::from_secs(14)));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let refused = send("during").await;
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    let body: Value = serde_json::from_slice(&refused.bytes().await.unwrap()).unwrap();
    assert_eq!(
        (body["type"].as_str(), body["error"]["type"].as_str()),
        (Some("error"), Some("overloaded_error"))
    );
    assert_eq!(upstream.requests().len(), 1, "nothing forwarded unguarded");
    restart.await.unwrap();

    // Back: the conversation goes on from its state (the refused request left no trace).
    let mut answered = None;
    for _ in 0..20 {
        let response = send("after").await;
        if response.status() == 200 {
            answered = Some(response);
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(answered.is_some(), "the gateway recovered with the store");
    let state = store.load_journal("gateway/conversation/outage").await.unwrap().unwrap();
    assert_eq!(state["requests"], 2, "{state}");
}
