//! The routes the gateway passes through without guarding anything: token counting,
//! embeddings, the models list, and the answer to a route it does not serve. Each goes to the
//! upstream of the client's API with the same keys as its guarded requests.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Response};

use crate::Gateway;
use crate::respond::{json, refused, reply};
use crate::upstream::Call;
use crate::wire::Api;

/// Anthropic's token counting (SDKs' `messages.count_tokens`; Claude Code asks it), relayed as
/// it is: no run is made of it, nothing is guarded or recorded.
pub(crate) async fn count_tokens(
    State(gateway): State<Arc<Gateway>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    relay(&gateway, Api::Anthropic, "/v1/messages/count_tokens", &headers, body).await
}

/// OpenAI embeddings (`embeddings.create`: an agent's retrieval often shares the base URL of
/// its chat calls), relayed the same way: they hold no conversation to guard.
pub(crate) async fn embeddings(
    State(gateway): State<Arc<Gateway>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    relay(&gateway, Api::OpenAi, "/v1/embeddings", &headers, body).await
}

/// `body` posted to `path` on `api`'s upstream as it came, with the keys and retries of the
/// guarded routes; the answer goes back as the upstream gave it.
async fn relay(gateway: &Gateway, api: Api, path: &str, headers: &HeaderMap, body: Bytes) -> Response<Body> {
    if !gateway.authorized(headers) {
        return refused(api);
    }
    let pass_key = gateway.pass_client_key && gateway.require_key.is_none();
    let call = Call { http: &gateway.http, api, path, client: headers, pass_key };
    let answer = gateway.upstream.send(&call, body).await;
    json(answer.status, &answer.body, None)
}

/// The models list, from the upstream of the API the client speaks: an Anthropic client (its
/// `anthropic-version` or `x-api-key` header, no bearer token) is answered by the Anthropic
/// upstream, any other by the OpenAI one.
pub(crate) async fn models(State(gateway): State<Arc<Gateway>>, headers: HeaderMap) -> Response<Body> {
    list_models(&gateway, &headers, "/v1/models").await
}

/// One model (`GET /v1/models/{model}`): the id goes into the upstream's path, so only an id's
/// characters pass (no `.` or `..` segment, no escapes to decode upstream).
pub(crate) async fn model(
    State(gateway): State<Arc<Gateway>>,
    headers: HeaderMap,
    axum::extract::Path(model): axum::extract::Path<String>,
) -> Response<Body> {
    let id_char = |c: char| c.is_ascii_alphanumeric() || "-_.:@".contains(c);
    if model.is_empty() || model.chars().all(|c| c == '.') || !model.chars().all(id_char) {
        return json(404, &Api::OpenAi.error("not_found_error", "no such model id"), None);
    }
    list_models(&gateway, &headers, &format!("/v1/models/{model}")).await
}

/// `path` from the upstream of the client's API.
async fn list_models(gateway: &Gateway, headers: &HeaderMap, path: &str) -> Response<Body> {
    let anthropic = headers.get("authorization").is_none()
        && (headers.contains_key("anthropic-version") || headers.contains_key("x-api-key"));
    let api = if anthropic { Api::Anthropic } else { Api::OpenAi };
    if !gateway.authorized(headers) {
        return refused(api);
    }
    let pass_key = gateway.pass_client_key && gateway.require_key.is_none();
    let call = Call { http: &gateway.http, api, path, client: headers, pass_key };
    match gateway.http.send(gateway.upstream.get(&call)).await {
        Ok(response) => {
            let status = response.status().as_u16();
            let body = response.bytes().await.unwrap_or_default();
            reply(status, "application/json", body, None)
        }
        Err(e) => json(502, &api.error("api_error", &format!("upstream unreachable: {e}")), None),
    }
}

/// Any other route: a 404 that says what the gateway serves, in the format of the API the path
/// belongs to (an OpenAI client asking `/v1/responses` reads it as an OpenAI error).
pub(crate) async fn not_served(method: axum::http::Method, uri: axum::http::Uri) -> Response<Body> {
    let api = if uri.path().starts_with("/v1/messages") { Api::Anthropic } else { Api::OpenAi };
    let message = format!(
        "the looprail gateway does not serve {method} {}; it serves POST /v1/chat/completions, POST \
         /v1/messages, POST /v1/responses, POST /v1/messages/count_tokens, POST /v1/embeddings, GET \
         /v1/models[/{{model}}] and GET /healthz",
        uri.path()
    );
    json(404, &api.error("not_found_error", &message), None)
}
