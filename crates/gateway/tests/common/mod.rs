//! What the gateway's HTTP tests share.

// Each test file compiles this module and uses part of it.
#![allow(dead_code)]

pub mod chant;
pub mod node;
pub mod python;
pub mod sdk;

use serde_json::Value;

/// POSTs `body` as JSON to `url` and returns the response, whatever its status.
pub async fn post_json(client: &reqwest::Client, url: &str, body: &Value) -> reqwest::Response {
    client.post(url).header("content-type", "application/json").body(body.to_string()).send().await.unwrap()
}

/// A gateway with `settings` on a fresh SQLite store, serving on a free local port; its URL.
pub async fn serve(settings: looprail_gateway::GatewayConfig, name: &str) -> String {
    let store = TempStore::new(name);
    let sqlite = looprail_journal::SqliteStore::open(&store).await.unwrap();
    let gateway = looprail_gateway::Gateway::new(settings, sqlite.into()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        // The store's directory goes when the server does (the test's runtime ends).
        let _store = store;
        looprail_gateway::serve(listener, gateway, std::future::pending()).await
    });
    url
}

/// A SQLite file's path in a directory of its own, removed with everything in it (the `-wal`
/// and `-shm` files too) when this is dropped.
#[derive(Debug)]
pub struct TempStore {
    path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl TempStore {
    /// A fresh one, its directory named after `name`.
    pub fn new(name: &str) -> Self {
        let dir = tempfile::Builder::new().prefix(&format!("looprail-gw-{name}-")).tempdir().unwrap();
        Self { path: dir.path().join("gateway.db"), _dir: dir }
    }
}

impl std::ops::Deref for TempStore {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.path
    }
}
