//! What the gateway's HTTP tests share.

// Each test file compiles this module and uses part of it.
#![allow(dead_code)]

use serde_json::Value;

/// POSTs `body` as JSON to `url` and returns the response, whatever its status.
pub async fn post_json(client: &reqwest::Client, url: &str, body: &Value) -> reqwest::Response {
    client.post(url).header("content-type", "application/json").body(body.to_string()).send().await.unwrap()
}

/// A gateway with `settings` on a fresh SQLite store, serving on a free local port; its URL.
pub async fn serve(settings: looprail_gateway::GatewayConfig, name: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let path = std::env::temp_dir().join(format!("looprail-gw-{name}-{}-{nanos}.db", std::process::id()));
    let store = looprail_journal::SqliteStore::open(&path).await.unwrap();
    let gateway = looprail_gateway::Gateway::new(settings, store.into()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(looprail_gateway::serve(listener, gateway, std::future::pending()));
    url
}
