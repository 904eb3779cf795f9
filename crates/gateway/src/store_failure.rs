//! When the conversation's saved state cannot be read (a locked SQLite file, PostgreSQL down):
//! never a silent fresh start, which would hand a loop about to be concluded a clean slate. By
//! default the request fails closed: a 503 in the API's own error format with `retry-after`,
//! which the official SDKs retry. With `on_store_error = "fail_open"` it is forwarded unguarded,
//! as the client sent it. Either way the event `gateway.store.unavailable` (or
//! `gateway.store.fail_open`) is logged and counted (`looprail.events`).

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, Response};
use looprail_journal::JournalError;
use serde::{Deserialize, Serialize};

use crate::Gateway;
use crate::respond::{json, reply};
use crate::upstream::Call;
use crate::wire::Api;

/// What a request gets when its conversation's state cannot be read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StoreFailure {
    /// A 503 the client retries; nothing goes upstream (the default).
    #[default]
    FailClosed,
    /// The request goes upstream as it came, unguarded.
    FailOpen,
}

/// Why a request could not be prepared.
pub(crate) enum Unprepared {
    /// The request itself is wrong (a 400).
    Request(String),
    /// The store could not be read.
    Store(JournalError),
}

impl From<String> for Unprepared {
    fn from(message: String) -> Self {
        Unprepared::Request(message)
    }
}

/// Seconds a client is asked to wait before retrying.
const RETRY_AFTER_SECS: &str = "2";

impl Gateway {
    /// The answer to a request whose conversation's state could not be read.
    pub(crate) async fn store_failed(
        &self,
        api: Api,
        path: &str,
        headers: &HeaderMap,
        raw: Bytes,
        error: &JournalError,
    ) -> Response<Body> {
        if self.on_store_error == StoreFailure::FailOpen {
            tracing::warn!(name: "gateway.store.fail_open", target: "looprail", error = %error, "gateway: the conversation store cannot be read; forwarding the request unguarded (on_store_error = fail_open)");
            let pass_key = self.pass_client_key && self.require_key.is_none();
            let call = Call { http: &self.http, api, path, client: headers, pass_key };
            return match self.upstream.open(&call, raw).await {
                Ok(response) => {
                    let status = response.status().as_u16();
                    let kind = response
                        .headers()
                        .get("content-type")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("application/json")
                        .to_owned();
                    reply(status, &kind, Body::from_stream(response.bytes_stream()), None)
                }
                Err(answer) => json(answer.status, &answer.body, None),
            };
        }
        tracing::warn!(name: "gateway.store.unavailable", target: "looprail", error = %error, "gateway: the conversation store cannot be read; the request is refused (503) and not forwarded");
        let kind = match api {
            Api::Anthropic => "overloaded_error",
            Api::OpenAi | Api::Responses => "server_error",
        };
        let message = format!(
            "the looprail gateway cannot read this conversation's state ({error}); nothing was sent \
             upstream. Retry shortly."
        );
        let mut response = json(503, &api.error(kind, &message), None);
        response.headers_mut().insert("retry-after", HeaderValue::from_static(RETRY_AFTER_SECS));
        response
    }
}
