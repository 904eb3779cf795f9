//! What the gateway's HTTP tests share.

use serde_json::Value;

/// POSTs `body` as JSON to `url` and returns the response, whatever its status.
pub async fn post_json(client: &reqwest::Client, url: &str, body: &Value) -> reqwest::Response {
    client.post(url).header("content-type", "application/json").body(body.to_string()).send().await.unwrap()
}
