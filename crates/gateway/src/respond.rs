//! Building the gateway's HTTP answers: a body with its content type and the conversation's
//! run header, JSON, and the refusal of a client without the gateway's key in its API's format.

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderName, HeaderValue, Response, StatusCode};
use looprail_loop_core::json_text::json_text;
use serde_json::Value;

use crate::identity::RUN_HEADER;
use crate::wire::Api;

/// The run header's name, made once.
static RUN: HeaderName = HeaderName::from_static(RUN_HEADER);

/// An answer of `status` with `body`, and the conversation's id in the run header when known
/// (a content type or id no header may carry is left out).
pub(crate) fn reply(
    status: u16,
    content_type: &str,
    body: impl Into<Body>,
    run: Option<&str>,
) -> Response<Body> {
    let mut response = Response::new(body.into());
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(content_type) {
        headers.insert(CONTENT_TYPE, value);
    }
    if let Some(value) = run.and_then(|run| HeaderValue::from_str(run).ok()) {
        headers.insert(RUN.clone(), value);
    }
    response
}

/// A JSON answer.
pub(crate) fn json(status: u16, body: &Value, run: Option<&str>) -> Response<Body> {
    reply(status, "application/json", json_text(body), run)
}

/// The answer to a client without the gateway's key, in its API's error format.
pub(crate) fn refused(api: Api) -> Response<Body> {
    json(401, &api.error("authentication_error", "missing or wrong gateway key"), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_answer_carries_its_type_and_run_and_keeps_its_body_when_a_value_cannot_be_sent() {
        let answer = reply(201, "application/json", "{}", Some("run-1"));
        assert_eq!(answer.status(), 201);
        assert_eq!(answer.headers()["content-type"], "application/json");
        assert_eq!(answer.headers()[RUN_HEADER], "run-1");
        // An upstream's content type no header may carry is left out; the body still goes.
        let answer = reply(502, "text/plain\n", "upstream said no", None);
        assert_eq!(answer.status(), 502);
        assert!(answer.headers().get("content-type").is_none() && answer.headers().get(RUN_HEADER).is_none());
        let body = axum::body::to_bytes(answer.into_body(), 1024).await.unwrap();
        assert_eq!(&body[..], b"upstream said no");
    }
}
