//! Building the gateway's HTTP answers: a body with its content type and the conversation's
//! run header, JSON, and the refusal of a client without the gateway's key in its API's format.

use axum::body::Body;
use axum::http::{Response, StatusCode};
use serde_json::Value;

use crate::identity::RUN_HEADER;
use crate::wire::Api;

/// An answer of `status` with `body`, and the conversation's id in the run header when known.
pub(crate) fn reply(
    status: u16,
    content_type: &str,
    body: impl Into<Body>,
    run: Option<&str>,
) -> Response<Body> {
    let mut builder = Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY))
        .header("content-type", content_type);
    if let Some(run) = run {
        builder = builder.header(RUN_HEADER, run);
    }
    builder.body(body.into()).unwrap_or_default()
}

/// A JSON answer.
pub(crate) fn json(status: u16, body: &Value, run: Option<&str>) -> Response<Body> {
    reply(status, "application/json", body.to_string(), run)
}

/// The answer to a client without the gateway's key, in its API's error format.
pub(crate) fn refused(api: Api) -> Response<Body> {
    json(401, &api.error("authentication_error", "missing or wrong gateway key"), None)
}
